"""SimPhone's UI toolkit: views and widgets, dialogs, the soft keyboard, layout, paint and PNG render,
uiautomator XML.
"""

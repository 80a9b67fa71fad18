"""Demonstrations from SimPhone's oracle: expert plans, role demonstrations through the real graph,
expert steps.
"""

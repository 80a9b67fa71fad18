"""SimPhone: an in-process virtual Android phone for testing and training GUI agents.

``SimPhone(seed)`` is a :class:`~agent_runtime.device.Device` with a launcher, apps
(Settings, Clock, Contacts, Messages, Calendar, Browser, Notes, Expenses, Shop, Files, Gallery,
Music, Recorder, Phone, Email, Maps, Weather), a soft keyboard,
dialogs and pickers. It renders real PNG screenshots and uiautomator XML from one view tree,
is deterministic for a seed, and runs well over 100 steps per second. The ``adb`` subpackage
serves phones over the adb protocol; ``tasks`` holds android_world-style tasks.
"""

from agent_runtime.simphone.app import App, Dialog, Screen
from agent_runtime.simphone.apps.launcher import LAUNCHER_PACKAGE
from agent_runtime.simphone.phone import SimPhone

__all__ = ["LAUNCHER_PACKAGE", "App", "Dialog", "Screen", "SimPhone"]

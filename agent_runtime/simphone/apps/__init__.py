"""The built-in apps, one module each. ``APP_CLASSES`` is the install order (launcher first).

Contacts comes before Messages because Messages seeds its conversations from the contacts
(and before Phone, whose call log it seeds from the contacts' numbers).
"""

from __future__ import annotations

from agent_runtime.simphone.app import App
from agent_runtime.simphone.apps.browser import BrowserApp
from agent_runtime.simphone.apps.calendar import CalendarApp
from agent_runtime.simphone.apps.clock import ClockApp
from agent_runtime.simphone.apps.contacts import ContactsApp
from agent_runtime.simphone.apps.dialer import DialerApp
from agent_runtime.simphone.apps.expenses import ExpensesApp
from agent_runtime.simphone.apps.files import FilesApp
from agent_runtime.simphone.apps.gallery import GalleryApp
from agent_runtime.simphone.apps.launcher import LAUNCHER_PACKAGE, LauncherApp
from agent_runtime.simphone.apps.mail import EmailApp
from agent_runtime.simphone.apps.maps import MapsApp
from agent_runtime.simphone.apps.messages import MessagesApp
from agent_runtime.simphone.apps.music import MusicApp
from agent_runtime.simphone.apps.notes import NotesApp
from agent_runtime.simphone.apps.recorder import RecorderApp
from agent_runtime.simphone.apps.settings import SettingsApp
from agent_runtime.simphone.apps.shop import ShopApp
from agent_runtime.simphone.apps.weather import WeatherApp

APP_CLASSES: tuple[type[App], ...] = (
    LauncherApp,
    SettingsApp,
    ClockApp,
    ContactsApp,
    MessagesApp,
    CalendarApp,
    BrowserApp,
    NotesApp,
    ExpensesApp,
    ShopApp,
    FilesApp,
    GalleryApp,
    MusicApp,
    RecorderApp,
    DialerApp,
    EmailApp,
    MapsApp,
    WeatherApp,
)

__all__ = ["APP_CLASSES", "LAUNCHER_PACKAGE"]

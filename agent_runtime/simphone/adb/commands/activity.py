"""``am`` (start, broadcast, force-stop) and ``monkey``: launching apps and sending intents.

Each SimPhone app has one launchable activity (``App.activity``): ``am start -n PKG/ACT`` opens
it and refuses other activity names as Android does; ``-a android.intent.action.MAIN -c
android.intent.category.HOME`` goes home; ``android.settings.*`` actions open Settings; ``-a
android.intent.action.VIEW -d http(s)://…`` opens the URL in Browser. Broadcasts reach only ADB
Keyboard (see :mod:`.ime`); anything else is delivered to no one, which ``am`` reports the same way.
"""

from __future__ import annotations

from agent_runtime.simphone.adb.commands.ime import deliver_broadcast
from agent_runtime.simphone.adb.commands.intent import (
    Intent,
    IntentError,
    parse_intent,
    short_component,
)
from agent_runtime.simphone.adb.context import CommandFn, Context
from agent_runtime.simphone.apps.browser import BrowserApp

LAUNCHER = "com.android.launcher3"
SETTINGS = "com.android.settings"
BROWSER = "com.android.browser"
HOME_CATEGORY = "android.intent.category.HOME"
VIEW = "android.intent.action.VIEW"
#: FLAG_RECEIVER_INCLUDE_BACKGROUND, which ``am broadcast`` adds to every intent.
_BROADCAST_FLAG = 0x400000


def _target(intent: Intent) -> str | None:
    """The package an activity intent resolves to, or None."""
    if intent.component:
        return intent.component[0]
    if HOME_CATEGORY in intent.categories:
        return LAUNCHER
    if intent.action and intent.action.startswith("android.settings."):
        return SETTINGS
    if intent.action == VIEW and (intent.data or "").startswith(("http://", "https://")):
        return BROWSER
    if intent.package and intent.action in (None, "android.intent.action.MAIN"):
        return intent.package
    return None


def _start(ctx: Context, args: list[str]) -> int:
    try:
        intent = parse_intent(args)
    except IntentError as exc:
        ctx.error(f"Error: {exc}")
        return 1
    phone = ctx.device.phone
    package = _target(intent)
    ctx.print(f"Starting: {intent.describe()}")
    if package is None or package not in phone.apps:
        ctx.error(f"Error: Activity not started, unable to resolve {intent.describe()}")
        return 1
    if intent.component and intent.component[1] != phone.apps[package].activity:
        ctx.error(
            f"Error type 3\nError: Activity class {{{short_component(*intent.component)}}} does not exist."
        )
        return 1
    already_top = phone.current_focus()[0] == package
    phone.launch(package)
    if package == BROWSER and intent.action == VIEW and intent.data:
        browser = phone.app(BROWSER)
        assert isinstance(browser, BrowserApp)
        browser.navigate(intent.data)
        already_top = False
    if already_top:
        ctx.print(
            "Warning: Activity not started, intent has been delivered to currently running top-most instance."
        )
    if "-W" in intent.options:
        focus_pkg, focus_act = ctx.device.phone.current_focus()
        ctx.print(f"Status: ok\nLaunchState: {'HOT' if already_top else 'COLD'}")
        ctx.print(f"Activity: {short_component(focus_pkg, focus_act)}\nTotalTime: 0\nWaitTime: 0\nComplete")
    return 0


def _broadcast(ctx: Context, args: list[str]) -> int:
    try:
        intent = parse_intent(args)
    except IntentError as exc:
        ctx.error(f"Error: {exc}")
        return 1
    intent.flags |= _BROADCAST_FLAG
    ctx.print(f"Broadcasting: {intent.describe()}")
    deliver_broadcast(ctx, intent)
    ctx.print("Broadcast completed: result=0")
    return 0


def _force_stop(ctx: Context, args: list[str]) -> int:
    for package in (a for a in args if not a.startswith("-")):
        ctx.device.phone.force_stop(package)
        ctx.device.started.discard(package)
    return 0


def am(ctx: Context, args: list[str]) -> int:
    if not args:
        ctx.print(
            "Activity manager (activity) commands:\n  start [options] INTENT\n  broadcast [options] INTENT\n"
            "  force-stop [--user <USER_ID>] <PACKAGE>"
        )
        return 1
    sub, rest = args[0], args[1:]
    if sub in ("start", "start-activity"):
        return _start(ctx, rest)
    if sub == "broadcast":
        return _broadcast(ctx, rest)
    if sub in ("force-stop", "stop-app"):
        return _force_stop(ctx, rest)
    if sub == "kill":
        return 0
    ctx.error(f"Unknown command: {sub}")
    return 255


def monkey(ctx: Context, args: list[str]) -> int:
    """Only the launch form clients use: ``monkey -p PKG -c android.intent.category.LAUNCHER 1``."""
    for arg in args:
        ctx.print(f"  bash arg: {arg}")
    packages: list[str] = []
    rest = list(args)
    count = None
    while rest:
        arg = rest.pop(0)
        if arg == "-p" and rest:
            packages.append(rest.pop(0))
        elif arg in ("-c", "-s", "--throttle", "--pct-touch", "--pct-motion", "--pct-syskeys") and rest:
            rest.pop(0)
        elif arg.isdigit():
            count = int(arg)
    if count is None:
        ctx.error("** Error: Count not specified")
        return 1
    if count != 1 or len(packages) != 1:
        ctx.error("** Error: SimPhone's monkey only launches one app: use -p PACKAGE ... 1")
        return 1
    if not ctx.device.phone.launch(packages[0]):
        ctx.print("** No activities found to run, monkey aborted.")
        return 252
    ctx.print(
        "Events injected: 1\n## Network stats: elapsed time=5ms (0ms mobile, 0ms wifi, 5ms not connected)"
    )
    return 0


COMMANDS: dict[str, CommandFn] = {"am": am, "monkey": monkey}

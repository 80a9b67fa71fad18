"""System services as the shell sees them: ``wm dumpsys pm getprop setprop settings``.

``dumpsys`` prints only the lines clients parse (``mCurrentFocus=Window{… PKG/ACT}``,
``DisplayViewport{… orientation=0 … deviceWidth=… deviceHeight=…}``, ``mResumedActivity``,
``mInputShown``), in Android's format.
"""

from __future__ import annotations

import zlib

from agent_runtime.simphone.adb.commands.intent import short_component
from agent_runtime.simphone.adb.commands.process import app_pid, now_utc, task_id
from agent_runtime.simphone.adb.context import CommandFn, Context
from agent_runtime.simphone.adb.fs import FsError
from agent_runtime.simphone.adb.numbers import integer
from agent_runtime.simphone.adb.state import NAMESPACES, package_version

DENSITY = 420


def _hash(text: str) -> str:
    """A stable object hash for ``Window{hash u0 …}`` records."""
    return f"{zlib.crc32(text.encode()):x}"


def _task_id(ctx: Context, package: str) -> int:
    return task_id(ctx.device, package)


def wm(ctx: Context, args: list[str]) -> int:
    size = ctx.device.phone.screen_size
    if args[:1] == ["size"] and len(args) == 1:
        ctx.print(f"Physical size: {size.width}x{size.height}")
        return 0
    if args[:1] == ["density"] and len(args) == 1:
        ctx.print(f"Physical density: {DENSITY}")
        return 0
    if args[:1] in (["size"], ["density"]):
        ctx.error(f"Error: SimPhone's screen {args[0]} is fixed")
        return 255
    ctx.error(f"Error: unknown command '{' '.join(args)}'")
    return 255


def _record(ctx: Context, package: str, activity: str) -> str:
    """``ActivityRecord{hash u0 pkg/.Act tTASK}``, as ``dumpsys`` prints an activity."""
    name = short_component(package, activity)
    return f"ActivityRecord{{{_hash(activity)} u0 {name} t{_task_id(ctx, package)}}}"


def _window(ctx: Context) -> None:
    package, activity = ctx.device.phone.current_focus()
    window = f"Window{{{_hash(package + activity)} u0 {package}/{activity}}}"
    record = _record(ctx, package, activity)
    size = ctx.device.phone.screen_size
    ctx.print("WINDOW MANAGER WINDOWS (dumpsys window windows)")
    ctx.print(f"  Window #0 {window}:")
    ctx.print(f"    mDisplayId=0 rootTaskId={_task_id(ctx, package)} package={package}")
    ctx.print(f"    mFrame=[0,0][{size.width},{size.height}]")
    ctx.print(f"  mTopFocusedDisplayId=0\n  mInputMethodTarget in display# 0 {window}")
    ctx.print(f"  mCurrentFocus={window}")
    ctx.print(f"  mFocusedApp={record}")


def _activity(ctx: Context, section: str) -> None:
    package, activity = ctx.device.phone.current_focus()
    record = _record(ctx, package, activity)
    task = _task_id(ctx, package)
    if section == "top":
        ctx.print(f"TASK {package} id={task} userId=0")
        pid = app_pid(ctx.device, package)
        ctx.print(f"  ACTIVITY {short_component(package, activity)} {_hash(activity)} pid={pid}")
        return
    ctx.print("ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)")
    ctx.print(f"  Display #0 (activities from top to bottom):\n    * Task{{{_hash(package)} #{task}}}")
    ctx.print(f"  ResumedActivity: {record}")
    ctx.print(f"  mResumedActivity: {record}")


def _display(ctx: Context) -> None:
    size = ctx.device.phone.screen_size
    w, h = size.width, size.height
    ctx.print("DISPLAY MANAGER (dumpsys display)")
    ctx.print(
        "  mViewports=[DisplayViewport{type=INTERNAL, valid=true, isActive=true, displayId=0, "
        f"uniqueId='local:0', physicalPort=0, orientation=0, logicalFrame=Rect(0, 0 - {w}, {h}), "
        f"physicalFrame=Rect(0, 0 - {w}, {h}), deviceWidth={w}, deviceHeight={h}}}]"
    )
    info = f'"Built-in Screen": uniqueId="local:0", {w} x {h}, density {DENSITY}, rotation 0'
    ctx.print(f"  DisplayDeviceInfo{{{info}}}")
    ctx.print("  mCurrentOrientation=0")


def _input_method(ctx: Context) -> None:
    shown = ctx.device.phone.focused_field() is not None
    ctx.print(f"  mCurMethodId={ctx.device.ime.selected}")
    ctx.print(f"  mInputShown={str(shown).lower()}")


def _battery(ctx: Context, args: list[str]) -> int:
    """``dumpsys battery``: the level the status bar shows, on battery (SimPhone never charges).

    ``set level N`` changes the phone's level (status bar included); ``reset``/``unplug`` undo it.
    """
    shell = ctx.device
    phone = shell.phone
    if args[:1] == ["set"] and len(args) == 3:
        if args[1] == "level":
            phone.battery = integer(args[2], lo=0, hi=100, what="level")
        elif args[1] not in ("ac", "usb", "wireless", "status", "present", "temp", "invalid"):
            ctx.error(f"Unknown set option: {args[1]}")
            return 255
        return 0
    if args[:1] in (["reset"], ["unplug"]):
        phone.battery = shell.battery_unplugged
        return 0
    if args:
        ctx.error(f"Unknown option: {args[0]}")
        return 255
    ctx.print(
        "Current Battery Service state:\n  AC powered: false\n  USB powered: false\n"
        "  Wireless powered: false\n  Dock powered: false\n  Max charging current: 0\n"
        f"  Charge counter: {phone.battery * 40000}\n"
        f"  status: 3\n  health: 2\n  present: true\n  level: {phone.battery}\n  scale: 100\n"
        "  voltage: 3900\n  temperature: 250\n  technology: Li-ion"
    )
    return 0


def _package(ctx: Context, names: list[str]) -> None:
    """``dumpsys package PKG``: the fields clients read (``versionName=``, ``versionCode=``, paths)."""
    installed = ctx.device.packages()
    wanted = [n for n in names if not n.startswith("-")]
    if not wanted:
        wanted = installed
    for package in wanted:
        if package not in installed:
            ctx.print(f"Unable to find package: {package}")
            continue
        name, code = package_version(package)
        user = 10000 + task_id(ctx.device, package)
        installed_at = now_utc(ctx.device).replace(hour=0, minute=0, second=0).strftime("%Y-%m-%d %H:%M:%S")
        ctx.print(f"Packages:\n  Package [{package}] ({_hash(package)}):")
        ctx.print(f"    appId={user}\n    pkg=Package{{{_hash(package + ':pkg')} {package}}}")
        ctx.print(f"    codePath={_apk_path(package).rsplit('/', 1)[0]}")
        ctx.print(f"    versionCode={code} minSdk=26 targetSdk=34\n    versionName={name}")
        ctx.print(f"    dataDir=/data/user/0/{package}\n    firstInstallTime={installed_at}")
        ctx.print(f"    lastUpdateTime={installed_at}\n    User 0: ceDataInode=0 installed=true enabled=0")


def dumpsys(ctx: Context, args: list[str]) -> int:
    service = args[0] if args else ""
    if service == "window":
        _window(ctx)
    elif service == "activity":
        _activity(ctx, args[1] if len(args) > 1 else "activities")
    elif service == "display":
        _display(ctx)
    elif service == "input_method":
        _input_method(ctx)
    elif service == "power":
        ctx.print("POWER MANAGER (dumpsys power)\n  mWakefulness=Awake\n  mHoldingDisplaySuspendBlocker=true")
    elif service == "battery":
        return _battery(ctx, args[1:])
    elif service == "package":
        _package(ctx, args[1:])
    elif service == "statusbar":
        expanded = ctx.device.statusbar != "collapsed"
        ctx.print(f"  mExpandedVisible={str(expanded).lower()}\n  mPanelExpanded={str(expanded).lower()}")
    elif not service or service == "-l":
        ctx.print("Currently running services:")
        for name in ("activity", "battery", "display", "input_method", "package", "power", "statusbar"):
            ctx.print(f"  {name}")
        ctx.print("  window")
    else:
        ctx.print(f"Can't find service: {service}")
    return 0


def _apk_path(package: str) -> str:
    return f"/system/app/{package.rsplit('.', 1)[-1]}/{package.rsplit('.', 1)[-1]}.apk"


def pm(ctx: Context, args: list[str]) -> int:
    packages = sorted(ctx.device.packages())
    if args[:2] == ["list", "packages"]:
        flags = {a for a in args[2:] if a.startswith("-")}
        needle = next((a for a in args[2:] if not a.startswith("-")), "")
        for package in packages:
            third_party = package.startswith("com.simphone.")
            if (
                ("-3" in flags and not third_party)
                or ("-s" in flags and third_party)
                or needle not in package
            ):
                continue
            ctx.print(f"package:{_apk_path(package)}={package}" if "-f" in flags else f"package:{package}")
        return 0
    if args[:1] == ["path"] and len(args) == 2:
        if args[1] not in packages:
            return 1
        ctx.print(f"package:{_apk_path(args[1])}")
        return 0
    if args[:1] == ["dump"] and len(args) == 2:
        _package(ctx, args[1:])
        return 0
    if args[:1] == ["install"]:
        return _install(ctx, args[1:])
    if args[:1] == ["uninstall"]:
        names = [a for a in args[1:] if not a.startswith("-")]
        if not names:
            ctx.error("Error: package name not specified")
            return 1
        ctx.print("Failure [DELETE_FAILED_INTERNAL_ERROR]")  # SimPhone's apps are part of its system image
        return 1
    ctx.error(f"Error: SimPhone's pm supports 'list packages', 'path', 'dump', not '{' '.join(args)}'")
    return 255


def _install(ctx: Context, args: list[str]) -> int:
    """``pm install [-r …] PATH``: SimPhone cannot install APKs, so every install fails — loudly."""
    paths = [a for a in args if not a.startswith("-")]
    if not paths:
        ctx.error("Error: no package specified")  # what `pm install` with no file answers
        return 1
    path = paths[-1]
    try:
        data = ctx.device.fs.read(path)
    except FsError:
        ctx.error(f"Error: Unable to open file: {path}\nConsider using a file under /data/local/tmp/")
        return 1
    if not data.startswith(b"PK\x03\x04"):
        reason = "INSTALL_PARSE_FAILED_NOT_APK: Failed to parse /data/app/vmdl.tmp/base.apk: not an APK"
    else:
        reason = "INSTALL_FAILED_INTERNAL_ERROR: SimPhone cannot install APKs (its apps are built in)"
    ctx.print(f"Failure [{reason}]")
    return 1


def getprop(ctx: Context, args: list[str]) -> int:
    props = ctx.device.props
    if not args:
        for key in sorted(props):
            ctx.print(f"[{key}]: [{props[key]}]")
        return 0
    ctx.print(props.get(args[0], args[1] if len(args) > 1 else ""))
    return 0


def setprop(ctx: Context, args: list[str]) -> int:
    if len(args) != 2:
        ctx.error("setprop: need 2 arguments")
        return 1
    key, value = args
    if key.startswith("ro.") and key in ctx.device.props:
        ctx.error(f"Failed to set property '{key}' to '{value}'.")
        return 1
    ctx.device.props[key] = value
    return 0


def settings(ctx: Context, args: list[str]) -> int:
    rest = list(args)
    if len(rest) >= 2 and rest[0] == "--user":
        rest = rest[2:]
    verb = rest[0] if rest else ""
    if verb not in ("get", "put", "delete", "list") or len(rest) < 2:
        ctx.error("usage:  settings [--user <USER_ID>] get|put|delete|list NAMESPACE [KEY [VALUE]]")
        return 1
    namespace = rest[1]
    if namespace not in NAMESPACES:
        ctx.error(f"Invalid namespace '{namespace}'")
        return 1
    table = ctx.device.settings[namespace]
    if verb == "list":
        for key in sorted(table):
            ctx.print(f"{key}={table[key]}")
        return 0
    if len(rest) < 3 or (verb == "put" and len(rest) < 4):
        ctx.error(f"settings {verb}: missing arguments")
        return 1
    key = rest[2]
    if verb == "get":
        ctx.print(table.get(key, "null"))
    elif verb == "put":
        table[key] = rest[3]
    else:
        ctx.print(f"Deleted {int(table.pop(key, None) is not None)} rows")
    return 0


COMMANDS: dict[str, CommandFn] = {
    "dumpsys": dumpsys,
    "getprop": getprop,
    "pm": pm,
    "setprop": setprop,
    "settings": settings,
    "wm": wm,
}

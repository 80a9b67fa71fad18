"""``cmd SERVICE …`` and ``content``: the binder-service front ends clients call directly.

``cmd`` forwards ``package``, ``activity``, ``input``, ``settings``, ``window`` and
``input_method`` to the shell commands that already speak for those services (``pm``, ``am`` …)
and answers ``statusbar`` itself; any other service fails as Android's ``cmd`` does
(``cmd: Can't find service: X``, exit 20).

``content query|insert|update|delete --uri content://settings/NAMESPACE[/KEY]`` reads and writes
the same table as ``settings get|put``, printing rows as ``Row: 0 _id=3, name=…, value=…``;
``content query --uri content://com.android.contacts/data/phones`` lists the Contacts app's
numbers (``display_name``, ``data1``) as Android's contacts provider does.
"""

from __future__ import annotations

import re

from agent_runtime.simphone.adb.commands import activity, ime, input, system
from agent_runtime.simphone.adb.context import CommandFn, Context
from agent_runtime.simphone.adb.state import NAMESPACES

#: ``cmd statusbar`` verbs and the state each leaves the shade in.
_STATUSBAR = {
    "expand-notifications": "notifications",
    "expand-settings": "quick settings",
    "collapse": "collapsed",
}
_CMD_SERVICES: dict[str, CommandFn] = {
    "activity": activity.am,
    "input": input.input_cmd,
    "input_method": ime.ime,
    "package": system.pm,
    "settings": system.settings,
    "window": system.wm,
}
SERVICES = sorted({*_CMD_SERVICES, "statusbar", "battery", "display", "power"})


def _statusbar(ctx: Context, args: list[str]) -> int:
    verb = args[0] if args else ""
    if verb in _STATUSBAR:
        ctx.device.statusbar = _STATUSBAR[verb]
        return 0
    if verb in ("", "help", "-h"):
        ctx.print("Status bar commands:\n  help\n  expand-notifications\n  expand-settings\n  collapse")
        return 0
    ctx.error(f"Unknown command: {verb}")
    return 255


def cmd(ctx: Context, args: list[str]) -> int:
    if not args:
        ctx.error("cmd: No service specified; use -l to list all running services.")
        return 20
    if args[0] == "-l":
        ctx.print("Currently running services:")
        for name in SERVICES:
            ctx.print(f"  {name}")
        return 0
    service, rest = args[0], args[1:]
    if service == "statusbar":
        with ctx.device.phone.lock:
            return _statusbar(ctx, rest)
    forward = _CMD_SERVICES.get(service)
    if forward is not None:
        if service == "input":  # gestures take their time without the lock (see input_cmd)
            return forward(ctx, rest)
        with ctx.device.phone.lock:
            return forward(ctx, rest)
    if service in SERVICES:
        ctx.error(f"cmd: SimPhone's {service} service takes no shell commands")
        return 255
    ctx.error(f"cmd: Can't find service: {service}")
    return 20


# -- content ---------------------------------------------------------------------------------------

_URI = re.compile(r"content://(?P<authority>[^/]+)(?:/(?P<table>[^/]+)(?:/(?P<key>[^/]+))?)?/?$")
_WHERE = re.compile(r"""\s*(?P<column>\w+)\s*=\s*(?P<quote>['"]?)(?P<value>.*?)(?P=quote)\s*$""")
_CONTENT_USAGE = (
    "usage: adb shell content [subcommand] [options]\n\n"
    "  content query --uri <URI> [--user <USER_ID>] [--projection <PROJECTION>] [--where <WHERE>]\n"
    "  content insert --uri <URI> [--user <USER_ID>] --bind <BINDING> [--bind <BINDING>...]\n"
    "  content update --uri <URI> [--user <USER_ID>] [--where <WHERE>] --bind <BINDING>...\n"
    "  content delete --uri <URI> [--user <USER_ID>] [--where <WHERE>]"
)


class _ContentError(Exception):
    pass


def _options(args: list[str]) -> dict[str, list[str]]:
    options: dict[str, list[str]] = {}
    rest = list(args)
    while rest:
        option = rest.pop(0)
        if not option.startswith("--") or not rest:
            raise _ContentError(f"Error: Unsupported argument: {option}" if rest else f"Error: {option}")
        options.setdefault(option[2:], []).append(rest.pop(0))
    return options


def _binding(text: str) -> tuple[str, str]:
    """``name:s:value`` (any type letter) -> ``(name, value)``."""
    column, _, rest = text.partition(":")
    kind, _, value = rest.partition(":")
    if not column or not kind:
        raise _ContentError(f"Error: Invalid binding: {text}")
    return column, value


def _selection(options: dict[str, list[str]], key: str | None) -> str | None:
    """The one setting name a ``--where name='X'`` (or the URI) selects; None for all rows."""
    if key:
        return key
    where = options.get("where", [None])[-1]
    if where is None:
        return None
    match = _WHERE.match(where)
    if match is None or match["column"] != "name":
        raise _ContentError(f"Error: SimPhone's content supports --where \"name='KEY'\", not {where!r}")
    return match["value"]


def content(ctx: Context, args: list[str]) -> int:
    if not args or args[0] not in ("query", "insert", "update", "delete"):
        ctx.error(_CONTENT_USAGE)
        return 1
    verb = args[0]
    try:
        options = _options(args[1:])
        uri = options.get("uri", [""])[-1]
        match = _URI.match(uri)
        if not uri:
            raise _ContentError("Error: Content provider URI not specified")
        if match is not None and (match["authority"], match["table"], match["key"]) == _PHONES:
            if verb != "query":
                raise _ContentError(f"Error: SimPhone's contacts provider is read-only ({verb} {uri})")
            _phones(ctx, options.get("projection", [""])[-1])
            return 0
        if match is None or match["authority"] != "settings" or match["table"] not in NAMESPACES:
            authority = match["authority"] if match else uri
            raise _ContentError(
                f"Error while accessing provider:{authority}\n"
                f"java.lang.IllegalArgumentException: Unknown URI {uri}"
            )
        table = ctx.device.settings[match["table"]]
        if verb == "insert":
            bound = dict(_binding(b) for b in options.get("bind", []))
            if "name" not in bound:
                raise _ContentError("Error: a settings row needs --bind name:s:KEY")
            table[bound["name"]] = bound.get("value", "")
            return 0
        key = _selection(options, match["key"])
        if verb == "update":
            bound = dict(_binding(b) for b in options.get("bind", []))
            for name in [k for k in table if key is None or k == key]:
                table[name] = bound.get("value", table[name])
            return 0
        if verb == "delete":
            if key is not None:
                table.pop(key, None)
            return 0
        _query(ctx, table, key, options.get("projection", [""])[-1])
        return 0
    except _ContentError as exc:
        ctx.error(str(exc))
        return 1


def _query(ctx: Context, table: dict[str, str], key: str | None, projection: str) -> None:
    ids = {name: index + 1 for index, name in enumerate(sorted(table))}
    names = [k for k in sorted(table) if key is None or k == key]
    if not names:
        ctx.print("No result found.")
        return
    columns = [c for c in re.split(r"[:,]", projection) if c] or ["_id", "name", "value"]
    for row, name in enumerate(names):
        values = {"_id": str(ids[name]), "name": name, "value": table[name]}
        cells = ", ".join(f"{c}={values.get(c, 'NULL')}" for c in columns)
        ctx.print(f"Row: {row} {cells}")


#: ``content://com.android.contacts/data/phones``: one row per phone number, as Android lists them.
_PHONES = ("com.android.contacts", "data", "phones")


def _phones(ctx: Context, projection: str) -> None:
    """The Contacts app's phone numbers as the contacts provider's ``data/phones`` rows."""
    contacts = ctx.device.phone.apps.get("com.android.contacts")
    people = [c for c in (contacts.state.contacts if contacts is not None else []) if c.phone]
    if not people:
        ctx.print("No result found.")
        return
    columns = [c for c in re.split(r"[:,]", projection) if c] or [
        "_id",
        "contact_id",
        "display_name",
        "data1",
    ]
    for row, person in enumerate(people):
        values = {
            "_id": str(row + 1),
            "contact_id": str(person.id),
            "display_name": person.name,
            "data1": person.phone,
        }
        ctx.print(f"Row: {row} " + ", ".join(f"{c}={values.get(c, 'NULL')}" for c in columns))


COMMANDS: dict[str, CommandFn] = {"cmd": cmd, "content": content}

"""SimPhone's whole state as JSON: encode, decode, diff and match paths against footprints.

:meth:`SimPhone.state` is a JSON-safe dict with a fixed layout and a stable key order::

    {"format": "simphone-state/1",
     "device": {seed, serial, randomize, width, height},          # what the phone was built with
     "os": {clock, battery, wallpaper, foreground, keyboard, toast},
     "apps": {"contacts": {...}, "notes": {...}, ...},              # every app's stored data
     "ui": {"contacts": {"stack": [screen, ...]}, ...}}             # back stacks, fields, dialogs

Apps are keyed by :func:`app_key` (``"Contacts"`` → ``contacts``), so a state path reads
``apps.contacts.contacts[id=3].phone``. Only ``apps`` is an app's *data*: what the OS and the
screens hold (``os``, ``ui``) is never a side effect of a task.

The codec is generic over the apps' state dataclasses, so an app added later needs no code
here: a field is encoded by its *declared* type (``dt.date`` → ISO text, an enum → its value,
a nested dataclass → an object in field order, ``tuple``/``set``/``dict`` → lists and objects)
and decoded back through the same type hints. Values whose type is not declared (``Any``, a
screen's ``params``, a dialog's ``data``, unions of several types) carry a tag instead:
``{"$date": "2025-03-14"}``, ``{"$tuple": [9, 0]}``, ``{"$dataclass": "module:Class", ...}``.

A dialog holds closures, which no JSON can carry; it is restored by replaying the input that
opened it (:attr:`~agent_runtime.simphone.app.Dialog.opener`, recorded by the phone) and then
putting back its typed text and data. A dialog that cannot be replayed (one a task or a shell
command opened directly) makes :func:`restore` raise :class:`StateError` rather than show a
different screen.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import fnmatch
import functools
import importlib
import math
import re
import types
import typing
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from agent_runtime.errors import DeviceError

if TYPE_CHECKING:
    from agent_runtime.coords import Size
    from agent_runtime.simphone.app import App, Dialog, Screen
    from agent_runtime.simphone.ui.keyboard import KeyboardState

FORMAT = "simphone-state/1"
#: Modules a ``$dataclass`` / ``$enum`` tag may name (a state file must not import anything else).
_TAG_MODULES = "agent_runtime."
_NONE = type(None)

Json = Any


class StateError(DeviceError):
    """A SimPhone state cannot be encoded or restored (the message names the path)."""


class Stateful(Protocol):
    """What :func:`snapshot` reads and :func:`restore` writes: the phone's OS state and apps
    (the phone calls them with itself)."""

    seed: int
    serial: str
    randomize: bool
    battery: int
    wallpaper: int
    foreground: str
    keyboard: KeyboardState

    @property
    def lock(self) -> AbstractContextManager[Any]: ...

    @property
    def size(self) -> Size: ...

    @property
    def now(self) -> dt.datetime: ...

    @property
    def toast_text(self) -> str | None: ...

    @property
    def apps(self) -> Mapping[str, App]: ...

    def set_clock(self, when: dt.datetime) -> None: ...

    def show_toast(self, text: str) -> None: ...

    def replay_input(self, event: str, path: tuple[int, ...]) -> None: ...


def app_key(label: str) -> str:
    """An app's key in the state: its label, lower case, spaces as ``_``.

    >>> app_key("Contacts"), app_key("Voice Recorder")
    ('contacts', 'voice_recorder')
    """
    return "_".join(label.casefold().split())


# -- encoding -----------------------------------------------------------------------------------


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _untyped(tp: Any) -> bool:
    """Whether a value of declared type ``tp`` must carry its own type tags."""
    if tp is Any or tp is object:
        return True
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return len([a for a in typing.get_args(tp) if a is not _NONE]) > 1
    return False


def encode(value: Any, tp: Any = Any, path: str = "$") -> Json:
    """``value`` as JSON, by its declared type ``tp`` (``Any``: self-describing tags)."""
    if _untyped(tp):
        return _tagged(value, path)
    if value is None:
        return None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return encode(value, next(a for a in args if a is not _NONE), path)
    if isinstance(value, enum.Enum):
        return encode(value.value, Any, path)
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise StateError(f"SimPhone state at {path} is {value}, which JSON cannot hold")
        return value
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encode_dataclass(value, path)
    if isinstance(value, list | tuple):
        return [encode(v, _item_type(tp, i), f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, set | frozenset):
        item = args[0] if args else Any
        return sorted((encode(v, item, f"{path}[]") for v in value), key=repr)
    if isinstance(value, dict):
        key_tp, val_tp = args if len(args) == 2 else (Any, Any)
        if _untyped(key_tp):  # keys of any type: the tagged form keeps 2 apart from "2"
            return _tagged(value, path)
        return {_encode_key(k, path): encode(v, val_tp, f"{path}.{k}") for k, v in value.items()}
    raise StateError(f"SimPhone state at {path} holds a {type(value).__name__}, which has no JSON form")


def _encode_dataclass(value: Any, path: str) -> dict[str, Json]:
    cls: type = type(value)
    hints = _hints(cls)
    return {
        f.name: encode(getattr(value, f.name), hints.get(f.name, Any), f"{path}.{f.name}")
        for f in dataclasses.fields(value)
    }


def _encode_key(key: Any, path: str) -> str:
    if isinstance(key, enum.Enum):
        key = key.value
    if isinstance(key, bool) or not isinstance(key, str | int):
        raise StateError(f"SimPhone state at {path} has a dict key {key!r} that is not text or a number")
    return str(key)


def _item_type(tp: Any, index: int) -> Any:
    args = typing.get_args(tp)
    if not args:
        return Any
    if typing.get_origin(tp) is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        return args[index] if index < len(args) else Any
    return args[0]


def _qualname(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _tagged(value: Any, path: str) -> Json:
    """Self-describing JSON for a value whose type the declaration does not give."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return encode(value, float, path)
    if isinstance(value, enum.Enum):
        return {"$enum": _qualname(type(value)), "value": _tagged(value.value, path)}
    if isinstance(value, dt.datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, dt.date):
        return {"$date": value.isoformat()}
    if isinstance(value, dt.time):
        return {"$time": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {"$timedelta": value.total_seconds()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"$dataclass": _qualname(type(value)), "fields": _encode_dataclass(value, path)}
    if isinstance(value, tuple):
        return {"$tuple": [_tagged(v, f"{path}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [_tagged(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, set | frozenset):
        tag = "$frozenset" if isinstance(value, frozenset) else "$set"
        return {tag: sorted((_tagged(v, path) for v in value), key=repr)}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: _tagged(v, f"{path}.{k}") for k, v in value.items()}
        return {"$dict": [[_tagged(k, path), _tagged(v, f"{path}.{k}")] for k, v in value.items()]}
    raise StateError(f"SimPhone state at {path} holds a {type(value).__name__}, which has no JSON form")


# -- decoding -----------------------------------------------------------------------------------


def _bad(path: str, want: str, data: Json) -> StateError:
    return StateError(
        f"SimPhone state at {path}: expected {want}, got {data!r:.80}",
        hint="restore a state written by SimPhone.state() (format simphone-state/1)",
    )


def decode(data: Json, tp: Any = Any, path: str = "$") -> Any:
    """The value that :func:`encode` turned into ``data``, rebuilt as declared type ``tp``."""
    if _untyped(tp):
        return _untag(data, path)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return None if data is None else decode(data, next(a for a in args if a is not _NONE), path)
    if tp is _NONE:
        if data is not None:
            raise _bad(path, "null", data)
        return None
    if origin is typing.Literal:
        if data not in args:
            raise _bad(path, f"one of {args}", data)
        return data
    if isinstance(tp, type):
        return _decode_class(data, tp, path)
    if origin in (list, tuple, set, frozenset):
        if not isinstance(data, list):
            raise _bad(path, "a list", data)
        items = [decode(v, _item_type(tp, i), f"{path}[{i}]") for i, v in enumerate(data)]
        return origin(items)
    if origin is dict:
        if not isinstance(data, dict):
            raise _bad(path, "an object", data)
        key_tp, val_tp = args if len(args) == 2 else (Any, Any)
        if _untyped(key_tp):
            return _untag(data, path)
        return {_decode_key(k, key_tp, path): decode(v, val_tp, f"{path}.{k}") for k, v in data.items()}
    raise StateError(f"SimPhone state at {path}: the declared type {tp!r} has no JSON form")


def _decode_class(data: Json, tp: type, path: str) -> Any:
    if issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError:
            raise _bad(path, f"a {tp.__name__} value", data) from None
    if tp is bool:
        if not isinstance(data, bool):
            raise _bad(path, "true or false", data)
        return data
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise _bad(path, "an integer", data)
        return data
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise _bad(path, "a number", data)
        return float(data)
    if tp is str:
        if not isinstance(data, str):
            raise _bad(path, "text", data)
        return data
    if tp in (dt.datetime, dt.date, dt.time):
        try:
            return tp.fromisoformat(data)
        except (TypeError, ValueError):
            raise _bad(path, f"an ISO {tp.__name__}", data) from None
    if tp is dt.timedelta:
        return dt.timedelta(seconds=_decode_class(data, float, path))
    if dataclasses.is_dataclass(tp):
        return _decode_dataclass(data, tp, path)
    if tp in (list, tuple, set, frozenset, dict):
        return decode(data, tp[Any] if tp is not dict else dict[Any, Any], path)
    raise StateError(f"SimPhone state at {path}: the declared type {tp.__name__} has no JSON form")


def _decode_dataclass(data: Json, cls: type, path: str) -> Any:
    if not isinstance(data, dict):
        raise _bad(path, f"a {cls.__name__} object", data)
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = set(data) - set(fields)
    if unknown:
        raise _bad(f"{path}.{sorted(unknown)[0]}", f"a field of {cls.__name__}", data[sorted(unknown)[0]])
    init: dict[str, Any] = {}
    later: dict[str, Any] = {}
    for name, f in fields.items():
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise StateError(f"SimPhone state at {path} lacks {cls.__name__}.{name}")
            continue  # a field added after the state was written: its default
        value = decode(data[name], hints.get(name, Any), f"{path}.{name}")
        (init if f.init else later)[name] = value
    obj = cls(**init)
    for name, value in later.items():
        object.__setattr__(obj, name, value)
    return obj


def _decode_key(key: str, tp: Any, path: str) -> Any:
    if tp is int:
        try:
            return int(key)
        except ValueError:
            raise _bad(path, "an integer key", key) from None
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        for member in tp:
            if str(member.value) == key:
                return member
        raise _bad(path, f"a {tp.__name__} key", key)
    return key


def _tagged_class(name: Json, path: str) -> type:
    module, _, qual = str(name).partition(":")
    if not module.startswith(_TAG_MODULES):
        raise _bad(path, "a class of agent_runtime", name)
    try:
        obj: Any = importlib.import_module(module)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        raise _bad(path, "a class that exists", name) from None
    if not isinstance(obj, type):
        raise _bad(path, "a class", name)
    return obj


def _untag(data: Json, path: str) -> Any:
    if data is None or isinstance(data, bool | int | float | str):
        return data
    if isinstance(data, list):
        return [_untag(v, f"{path}[{i}]") for i, v in enumerate(data)]
    if not isinstance(data, dict):
        raise _bad(path, "JSON", data)
    tag = next((k for k in data if k.startswith("$")), None)
    if tag is None:
        return {k: _untag(v, f"{path}.{k}") for k, v in data.items()}
    body = data[tag]
    if tag in ("$datetime", "$date", "$time"):
        return _decode_class(body, {"$datetime": dt.datetime, "$date": dt.date, "$time": dt.time}[tag], path)
    if tag == "$timedelta":
        return _decode_class(body, dt.timedelta, path)
    if tag in ("$tuple", "$set", "$frozenset") and isinstance(body, list):
        items = [_untag(v, f"{path}[{i}]") for i, v in enumerate(body)]
        return {"$tuple": tuple, "$set": set, "$frozenset": frozenset}[tag](items)
    if tag == "$dict" and isinstance(body, list):
        return {_untag(k, path): _untag(v, path) for k, v in body}
    if tag == "$enum":
        return _decode_class(_untag(data.get("value"), path), _tagged_class(body, path), path)
    if tag == "$dataclass":
        cls = _tagged_class(body, path)
        if not dataclasses.is_dataclass(cls):
            raise _bad(path, "a dataclass", body)
        return _decode_dataclass(data.get("fields"), cls, path)
    raise _bad(path, "a known $tag", tag)


# -- the phone ----------------------------------------------------------------------------------


def app_data(app: App) -> Json:
    """One app's stored data (``app.state``) as JSON."""
    if not dataclasses.is_dataclass(app.state):
        raise StateError(
            f"SimPhone app {app.package} keeps its state in a {type(app.state).__name__}, not a dataclass",
            hint="an app's state must be a dataclass (see agent_runtime.simphone.app)",
        )
    return encode(app.state, type(app.state), f"apps.{app_key(app.label)}")


def snapshot(phone: Stateful) -> dict[str, Json]:
    """The whole phone as JSON (see the module docstring for the layout)."""
    with phone.lock:
        return {
            "format": FORMAT,
            "device": {
                "seed": phone.seed,
                "serial": phone.serial,
                "randomize": phone.randomize,
                "width": phone.size.width,
                "height": phone.size.height,
            },
            "os": {
                "clock": phone.now.isoformat(),
                "battery": phone.battery,
                "wallpaper": phone.wallpaper,
                "foreground": phone.foreground,
                "keyboard": {"layer": phone.keyboard.layer, "shift": phone.keyboard.shift},
                "toast": phone.toast_text,
            },
            "apps": {app_key(a.label): app_data(a) for a in phone.apps.values()},
            "ui": {app_key(a.label): {"stack": [_screen(s) for s in a.stack]} for a in phone.apps.values()},
        }


def _screen(screen: Screen) -> dict[str, Json]:
    dialog = screen.dialog
    return {
        "name": screen.name,
        "params": _tagged(screen.params, "ui.params"),
        "fields": dict(screen.fields),
        "scroll": dict(screen.scroll),
        "focus": screen.focus,
        "dialog": None if dialog is None else _dialog(dialog),
    }


def _dialog(dialog: Dialog) -> dict[str, Json]:
    return {
        "title": dialog.title,
        "fields": dict(dialog.fields),
        "scroll": dict(dialog.scroll),
        "focus": dialog.focus,
        "data": _tagged(dialog.data, "ui.dialog.data"),
        "opener": None if dialog.opener is None else [[e, list(p)] for e, p in dialog.opener],
    }


def restore(phone: Stateful, state: Mapping[str, Json]) -> None:
    """Put ``state`` (from :func:`snapshot`) onto ``phone``, a phone built with its ``device``.

    An app the state does not mention keeps its fresh data (a state written before the app was
    installed); an app the phone does not have is an error.
    """
    from agent_runtime.simphone.app import Screen

    if state.get("format") != FORMAT:
        raise _bad("format", FORMAT, state.get("format"))
    apps = {app_key(a.label): a for a in phone.apps.values()}
    unknown = sorted((set(state.get("apps", {})) | set(state.get("ui", {}))) - set(apps))
    if unknown:
        raise StateError(
            f"SimPhone state names app(s) this phone does not have: {', '.join(unknown)}",
            hint=f"apps: {', '.join(apps)}",
        )
    os_state = state.get("os", {})
    with phone.lock:
        phone.battery = decode(os_state.get("battery", phone.battery), int, "os.battery")
        phone.wallpaper = decode(os_state.get("wallpaper", phone.wallpaper), int, "os.wallpaper")
        phone.keyboard.layer = decode(
            os_state.get("keyboard", {}).get("layer", "letters"), str, "os.keyboard"
        )
        phone.keyboard.shift = decode(os_state.get("keyboard", {}).get("shift", False), bool, "os.keyboard")
        for key, data in state.get("apps", {}).items():
            app = apps[key]
            app.state = decode(data, type(app.state), f"apps.{key}")
        dialogs: list[tuple[App, dict[str, Json]]] = []
        for key, ui in state.get("ui", {}).items():
            stack = ui.get("stack") if isinstance(ui, dict) else None
            if not isinstance(stack, list) or not stack:
                raise _bad(f"ui.{key}.stack", "a list of screens", stack)
            app = apps[key]
            app.stack = []
            for i, data in enumerate(stack):
                where = f"ui.{key}.stack[{i}]"
                screen = Screen(
                    name=decode(data.get("name"), str, where),
                    params=_untag_dict(data.get("params", {}), f"{where}.params"),
                    fields=decode(data.get("fields", {}), dict[str, str], f"{where}.fields"),
                    scroll=decode(data.get("scroll", {}), dict[str, int], f"{where}.scroll"),
                    focus=decode(data.get("focus"), str | None, f"{where}.focus"),
                )
                app.stack.append(screen)
                if data.get("dialog") is not None:
                    if i != len(stack) - 1:
                        raise StateError(f"SimPhone state at {where}: a dialog on a screen under the top")
                    dialogs.append((app, data["dialog"]))
        foreground = decode(os_state.get("foreground", phone.foreground), str, "os.foreground")
        if foreground not in phone.apps:
            raise _bad("os.foreground", "an installed package", foreground)
        for app, data in dialogs:
            _reopen(phone, app, data, f"ui.{app_key(app.label)}.dialog")
        phone.foreground = foreground
        phone.set_clock(decode(os_state.get("clock", phone.now.isoformat()), dt.datetime, "os.clock"))
        phone.show_toast(decode(os_state.get("toast"), str | None, "os.toast"))


def _untag_dict(data: Json, path: str) -> dict[str, Any]:
    value = _untag(data, path)
    if not isinstance(value, dict):
        raise _bad(path, "an object", data)
    return value


def _reopen(phone: Stateful, app: App, data: dict[str, Json], where: str) -> None:
    """Open the dialog ``data`` describes on ``app`` by replaying the input that opened it."""
    opener = data.get("opener")
    title = decode(data.get("title", ""), str, f"{where}.title")
    if not opener:
        raise StateError(
            f"SimPhone state at {where}: the dialog {title!r} was not opened by an input, so it "
            "cannot be reopened",
            hint="take the snapshot with the dialog closed",
        )
    before = app_data(app)
    phone.foreground = app.package
    for step in opener:
        event, path = decode(step, tuple[str, tuple[int, ...]], f"{where}.opener")
        phone.replay_input(event, path)
    dialog = app.screen.dialog
    if dialog is None or dialog.title != title or app_data(app) != before:
        raise StateError(
            f"SimPhone state at {where}: replaying the input that opened the dialog {title!r} "
            "did not reopen it as it was",
            hint="take the snapshot with the dialog closed",
        )
    dialog.fields.clear()
    dialog.fields.update(decode(data.get("fields", {}), dict[str, str], f"{where}.fields"))
    dialog.scroll.clear()
    dialog.scroll.update(decode(data.get("scroll", {}), dict[str, int], f"{where}.scroll"))
    dialog.focus = decode(data.get("focus"), str | None, f"{where}.focus")
    dialog.data.clear()
    dialog.data.update(_untag_dict(data.get("data", {}), f"{where}.data"))
    dialog.opener = tuple((e, tuple(p)) for e, p in opener)


# -- diffs and footprints -----------------------------------------------------------------------


def _keyed(items: list[Json]) -> dict[Json, Json] | None:
    """A list of records by their ``id``, when every item has a distinct one."""
    if not all(isinstance(v, dict) and isinstance(v.get("id"), int | str) for v in items):
        return None
    by_id = {v["id"]: v for v in items}
    return by_id if len(by_id) == len(items) else None


def diff(before: Json, after: Json, path: str = "") -> list[str]:
    """The paths where ``after`` differs from ``before`` (deepest first reached, in order).

    Records with an ``id`` are matched by it, so deleting one names that record
    (``notes[id=4]``), not every record after it.

    >>> diff({"a": [{"id": 1, "t": "x"}, {"id": 2, "t": "y"}]}, {"a": [{"id": 2, "t": "z"}]})
    ['a[id=1]', 'a[id=2].t']
    """
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in list(before) + [k for k in after if k not in before]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in before or key not in after:
                out.append(sub)
            else:
                out.extend(diff(before[key], after[key], sub))
        return out
    if isinstance(before, list) and isinstance(after, list):
        old, new = _keyed(before), _keyed(after)
        if old is not None and new is not None and (old or new):
            out = []
            for rid in list(old) + [k for k in new if k not in old]:
                sub = f"{path}[id={rid}]"
                out.extend([sub] if rid not in old or rid not in new else diff(old[rid], new[rid], sub))
            return out
        out = []
        for i in range(max(len(before), len(after))):
            if i >= len(before) or i >= len(after):
                out.append(f"{path}[{i}]")
            else:
                out.extend(diff(before[i], after[i], f"{path}[{i}]"))
        return out
    return [] if before == after and type(before) is type(after) else [path or "$"]


_TOKEN = re.compile(r"\[[^\]]*\]|[^.\[]+")


def covers(pattern: str, path: str) -> bool:
    """Whether footprint ``pattern`` covers state ``path``: its parts match the path's first parts.

    A part is a glob (``*``, ``*volume``); ``[*]`` matches any list item (``[3]``, ``[id=4]``).

    >>> covers("apps.notes.notes[*]", "apps.notes.notes[id=4].title")
    True
    >>> covers("apps.notes.notes[*]", "apps.notes.next_id")
    False
    >>> covers("apps.settings.*volume", "apps.settings.media_volume")
    True
    """
    want, have = _TOKEN.findall(pattern), _TOKEN.findall(path)
    if len(want) > len(have):
        return False
    return all(_part_covers(w, h) for w, h in zip(want, have, strict=False))


def _part_covers(want: str, have: str) -> bool:
    if want.startswith("["):
        return have.startswith("[") and (want == "[*]" or want == have)
    return not have.startswith("[") and fnmatch.fnmatchcase(have, want)

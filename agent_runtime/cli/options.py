"""Command-line options generated from pydantic config fields, as TRL's parser does from its dataclasses.

A command names the config fields it shows, each as a :class:`Flag` that says only where the
command line differs from the field (a flag name, a short alias, a default of "unset"); the
option's help is the field's ``description``, its default the field's default, its type the
field's annotation (``bool`` → ``--x/--no-x``, ``Literal`` → choices, optional → may be left
out) and its range the field's ``ge``/``le``. The parsed values go back into the config, whose
validators hold the rules, so a Python caller that builds the config from the same values gets
the same trainer arguments as the command line.

:func:`command` turns a body that takes those values as one dict into the function typer reads
options from: typer builds a command from a function's signature, so the signature is made here.
"""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import annotated_types
import typer
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

#: A :attr:`Flag.default` that keeps the field's own default.
FIELD_DEFAULT: Any = object()
#: A :attr:`Flag.default` that makes the option required.
REQUIRED: Any = inspect.Parameter.empty

Values = dict[str, Any]


@dataclass(frozen=True)
class Flag:
    """One config field on the command line, and how the command line differs from the field.

    ``default=None`` on a field with a real default means "unset": the command leaves the value
    out and the config in use (one per method, say) supplies its own default.
    """

    field: str
    name: str | None = None  # the option (default: --FIELD-NAME)
    alias: str | None = None  # a short form such as -c
    off: str | None = None  # a bool's off switch (default: --no-NAME; none when the default is False)
    scope: str | None = None  # what the option applies to, put before the help ("dgrpo: ...")
    help: str | None = None  # for an option that feeds fields of several configs
    default: Any = FIELD_DEFAULT
    type: Any = None  # the command line's type where the field's would read worse (str for an enum)
    hidden: bool = False
    param: str | None = None  # the key of its value (default: the field's name)


def help_text(description: str | None, scope: str | None = None) -> str:
    """A field's description as an option's help: a sentence, after the scope if there is one.

    >>> help_text("passes over the data")
    'Passes over the data.'
    >>> help_text("positive replay buffer", "dgrpo")
    'dgrpo: positive replay buffer.'
    """
    text = (description or "").rstrip(".")
    if scope:
        return f"{scope}: {text}."
    return f"{text[:1].upper()}{text[1:]}."


def _bounds(metadata: list[Any]) -> dict[str, Any]:
    """typer's (inclusive) min and max from the field's ``ge``/``le``; ``gt``/``lt`` stay the config's."""
    bounds: dict[str, Any] = {}
    for item in metadata:
        if isinstance(item, annotated_types.Ge):
            bounds["min"] = item.ge
        elif isinstance(item, annotated_types.Le):
            bounds["max"] = item.le
    return bounds


def _default(flag: Flag, model: type[BaseModel]) -> Any:
    if flag.default is not FIELD_DEFAULT:
        return flag.default
    info = model.model_fields[flag.field]
    if info.default is PydanticUndefined and info.default_factory is None:
        return REQUIRED
    value = info.get_default(call_default_factory=True)
    return value.value if isinstance(value, enum.Enum) else value


def parameter(model: type[BaseModel], flag: Flag | str) -> inspect.Parameter:
    """The typer option of one field of ``model``."""
    if isinstance(flag, str):
        flag = Flag(flag)
    info = model.model_fields[flag.field]
    param = flag.param or flag.field
    name = flag.name or "--" + param.replace("_", "-")
    default = _default(flag, model)
    kind: Any = flag.type or info.annotation
    if default is None:
        kind = kind | None  # left out, the config in use supplies the value
    decls = [name]
    if kind in (bool, bool | None) and default is not False:
        decls = [f"{name}/{flag.off or '--no-' + name.removeprefix('--')}"]
    if flag.alias:
        decls.append(flag.alias)
    numeric = kind in (int, float, int | None, float | None)
    option = typer.Option(
        *decls,
        help=help_text(info.description, flag.scope) if flag.help is None else flag.help,
        hidden=flag.hidden,
        **(_bounds(info.metadata) if numeric else {}),
    )
    return inspect.Parameter(
        param, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[kind, option], default=default
    )


def parameters(model: type[BaseModel], *flags: Flag | str) -> list[inspect.Parameter]:
    """The options of ``flags`` (fields of ``model``), in that order."""
    return [parameter(model, flag) for flag in flags]


def cli_parameter(name: str, annotation: Any, default: Any = REQUIRED) -> inspect.Parameter:
    """An option no config field holds (``annotation`` is ``Annotated[type, typer.Option(...)]``)."""
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)


def command(params: list[inspect.Parameter]) -> Callable[[Callable[[Values], None]], Callable[..., None]]:
    """Give ``body(values)`` the signature ``params``, so typer builds its options from them."""

    def decorate(body: Callable[[Values], None]) -> Callable[..., None]:
        @functools.wraps(body)
        def run(**values: Any) -> None:
            body(values)

        run.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
        run.__annotations__ = {}
        return run

    return decorate

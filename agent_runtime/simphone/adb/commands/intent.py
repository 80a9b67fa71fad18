"""Intent arguments as ``am start``/``am broadcast`` take them, and their ``Intent { … }`` description."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Extra options and how each value is typed (``--es`` string, ``--ei`` int, …).
_EXTRA_TYPES = {
    "--es": str,
    "--e": str,
    "--ei": int,
    "--el": int,
    "--ez": bool,
    "--ef": float,
    "--ed": float,
    "--eu": str,
}
#: ``am`` options that take one value and do not change what the intent resolves to.
_VALUED = frozenset(
    (
        "--user",
        "-R",
        "-P",
        "--start-profiler",
        "--sampling",
        "--streaming",
        "--attach-agent",
        "--task",
        "--display",
        "--windowingMode",
        "--activityType",
        "--receiver-permission",
    )
)


class IntentError(ValueError):
    """A malformed intent option; the message is what ``am`` prints after ``Error: ``."""


def _bool(text: str) -> bool:
    low = text.lower()
    if low in ("true", "t", "1"):
        return True
    if low in ("false", "f", "0"):
        return False
    raise IntentError(f"Invalid boolean value: {text}")


@dataclass
class Intent:
    action: str | None = None
    data: str | None = None
    mime_type: str | None = None
    categories: list[str] = field(default_factory=list)
    component: tuple[str, str] | None = None
    package: str | None = None
    flags: int = 0
    extras: dict[str, object] = field(default_factory=dict)
    options: set[str] = field(default_factory=set)

    def describe(self) -> str:
        """``Intent.toShortString``'s form: ``Intent { act=… cat=[…] dat=… cmp=pkg/.Act (has extras) }``."""
        parts = []
        if self.action:
            parts.append(f"act={self.action}")
        if self.categories:
            parts.append(f"cat=[{','.join(self.categories)}]")
        if self.data:
            parts.append(f"dat={self.data}")
        if self.mime_type:
            parts.append(f"typ={self.mime_type}")
        if self.flags:
            parts.append(f"flg={self.flags:#x}")
        if self.package:
            parts.append(f"pkg={self.package}")
        if self.component:
            parts.append(f"cmp={short_component(*self.component)}")
        if self.extras:
            parts.append("(has extras)")
        return "Intent { " + " ".join(parts) + " }"


def split_component(text: str) -> tuple[str, str]:
    """``pkg/.Act`` or ``pkg/pkg.Act`` -> ``(pkg, pkg.Act)``."""
    package, _, activity = text.partition("/")
    if not package or not activity:
        raise IntentError(f"Bad component name: {text}")
    return package, package + activity if activity.startswith(".") else activity


def short_component(package: str, activity: str) -> str:
    """``(pkg, pkg.Act)`` -> ``pkg/.Act`` as ``ComponentName.flattenToShortString`` writes it."""
    if activity.startswith(package + "."):
        return f"{package}/{activity[len(package) :]}"
    return f"{package}/{activity}"


def parse_intent(args: list[str]) -> Intent:
    """Parse ``am`` intent arguments; raises :class:`IntentError` for a missing value or a bad number."""
    intent = Intent()
    rest = list(args)

    def value(option: str) -> str:
        if not rest:
            raise IntentError(f'Argument expected after "{option}"')
        return rest.pop(0)

    while rest:
        option = rest.pop(0)
        if option == "-a":
            intent.action = value(option)
        elif option == "-d":
            intent.data = value(option)
        elif option == "-t":
            intent.mime_type = value(option)
        elif option == "-c":
            intent.categories.append(value(option))
        elif option == "-n":
            intent.component = split_component(value(option))
        elif option == "-p":
            intent.package = value(option)
        elif option == "-f":
            flag_text = value(option)
            try:
                intent.flags |= int(flag_text, 0)
            except ValueError:
                raise IntentError(f"Invalid integer value: {flag_text}") from None
        elif option in _EXTRA_TYPES:
            key, raw = value(option), value(option)
            kind = _EXTRA_TYPES[option]
            try:
                intent.extras[key] = _bool(raw) if kind is bool else kind(raw)
            except ValueError:
                raise IntentError(f"Invalid {kind.__name__} value: {raw}") from None
        elif option == "--esn":
            intent.extras[value(option)] = None
        elif option.startswith("--e") and option[3:] in (
            "ia",
            "ial",
            "la",
            "lal",
            "fa",
            "fal",
            "sa",
            "sal",
            "da",
        ):
            key, raw = value(option), value(option)
            intent.extras[key] = raw.split(",")
        elif option in _VALUED:
            value(option)
        elif option.startswith("-"):
            intent.options.add(option)
        elif "/" in option and not intent.component and "://" not in option:
            intent.component = split_component(option)
        else:
            intent.data = option
    return intent

"""The sorted task registry, name patterns, and the train/test split.

**Split rule.** An instance ``(template, seed)`` draws its parameters from
``random.Random(f"{template}/{seed}")``; its split is decided by hashing the template name and
the canonical JSON of those parameters: ``sha256(f"{template}|{params}")``, first 8 bytes as an
integer, modulo 4 — ``0`` is ``test``, the rest ``train`` (a 75/25 split). Hashing the
*parameters* rather than the seed means two seeds that happen to draw the same goal always land
in the same split, so no test goal is ever seen in training. The split is a pure function of the
template name and parameters: deterministic across machines, Python versions and runs.

:func:`task_instances` walks seeds ``seed, seed + 1, …`` for each selected template and keeps the
first ``episodes`` whose instance falls in the requested split.

**Selection and final test.** ``evolve`` needs two disjoint held-out sets: one it decides
promotions on (``selection``) and one it scores once, at the end, to report an honest number
(``final``). Both are halves of ``test``, split by the same digest's next 8 bytes modulo 2
(``0`` is ``selection``, ``1`` is ``final``): a parameter set is in exactly one of ``train``,
``selection`` and ``final``, so the three are disjoint by construction.

**Held-out templates.** :data:`TEMPLATE_HELDOUT` is a fixed set of templates that no
demonstration and no ``evolve`` run trains on, so a success rate on them measures templates the
model never saw (*template-held-out*), beside unseen parameters of seen templates
(*instance-held-out*). The rule, fixed before any measurement (:func:`held_out_templates`):
every 5th template in name order from the offset ``random.Random(34).randrange(5)``, applied to
each *batch* of templates registered together on its own
(:data:`~agent_runtime.simphone.tasks.batches.TEMPLATE_BATCHES`), never to all templates at once,
so a template added later (in a new batch) never moves an old one between the sets. The 65 of
the first nine apps give 13, one or two per app; the 54 of the Files, Gallery, Music and
Recorder apps (issue 37) add 10; the 65 of the Phone, Email, Maps and Weather apps and the
cross-app templates (issue 37) add 13.
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import random
import re
from collections.abc import Iterable
from typing import Literal

from agent_runtime.errors import TaskError
from agent_runtime.simphone.tasks import (
    browser,
    calendar,
    clock,
    contacts,
    crossapp,
    dialer,
    expenses,
    files,
    gallery,
    mail,
    maps,
    messages,
    music,
    notes,
    recorder,
    settings,
    shop,
    weather,
)
from agent_runtime.simphone.tasks.base import Task
from agent_runtime.simphone.tasks.batches import TEMPLATE_BATCHES

Split = Literal["train", "test", "all", "selection", "final"]
SPLITS: tuple[str, ...] = ("train", "test", "all", "selection", "final")
#: One in ``TEST_MODULUS`` parameter hashes is test.
TEST_MODULUS = 4
#: The seed of the held-out template rule (the issue's number): fixed before any measurement.
HOLDOUT_SEED = 34
#: One template in ``HOLDOUT_EVERY`` of each batch is held out.
HOLDOUT_EVERY = 5


def held_out_templates(batch: Iterable[str], seed: int = HOLDOUT_SEED) -> list[str]:
    """The held-out templates of one batch: every 5th name in name order from a seeded offset.

    Name order spreads the picks over the batch's apps (one in five of each app's run of names).
    Apply it to one batch at a time (module docstring): over a growing list the picks would move.

    >>> held_out_templates([f"T{i:02d}" for i in range(12)])
    ['T04', 'T09']
    """
    offset = random.Random(seed).randrange(HOLDOUT_EVERY)
    return sorted(batch)[offset::HOLDOUT_EVERY]


#: Templates no demonstration or evolve run trains on: the rule over each batch (module docstring).
TEMPLATE_HELDOUT: frozenset[str] = frozenset(
    name for batch in TEMPLATE_BATCHES for name in held_out_templates(batch)
)
#: How far :func:`task_instances` looks for instances of a split before giving up.
MAX_SEED_SCAN = 2000

#: The template modules, one per app (cross-app templates last), in the order they were added.
TEMPLATE_MODULES = (
    settings,
    clock,
    contacts,
    messages,
    calendar,
    browser,
    notes,
    expenses,
    shop,
    files,
    gallery,
    music,
    recorder,
    dialer,
    mail,
    maps,
    weather,
    crossapp,
)


def _by_name(templates: Iterable[type[Task]]) -> dict[str, type[Task]]:
    """``name -> template``. The registry owns the list of template modules and reads each one's
    ``TEMPLATES``, so a template module never imports the registry it is listed in."""
    found: dict[str, type[Task]] = {}
    for cls in templates:
        name = cls.task_name()
        if name in found and found[name] is not cls:
            raise TaskError(f"task template {name!r} is registered twice")
        found[name] = cls
    return found


_REGISTRY = _by_name(cls for module in TEMPLATE_MODULES for cls in module.TEMPLATES)


def registry() -> dict[str, type[Task]]:
    """All templates, sorted by class name."""
    return dict(sorted(_REGISTRY.items()))


def make_task(name: str, seed: int = 0) -> Task:
    """The instance of template ``name`` for ``seed`` (parameters drawn deterministically)."""
    cls = _REGISTRY.get(name)
    if cls is None:
        names = sorted(_REGISTRY)
        close = list(
            dict.fromkeys(
                difflib.get_close_matches(name, names, n=3, cutoff=0.6) + fnmatch.filter(names, f"*{name}*")
            )
        )[:5]
        raise TaskError(
            f"unknown SimPhone task {name!r}",
            hint=f"did you mean {', '.join(close)}?" if close else "list them: agent-runtime simphone tasks",
        )
    params = cls.generate_random_params(random.Random(f"{name}/{seed}"))
    return cls(params, seed=seed)


def select(patterns: str | Iterable[str] | None = None, *, app: str | None = None) -> list[str]:
    """Template names matching any pattern, sorted.

    A pattern is a glob (``Clock*``, ``*Alarm*``), or a regular expression when written
    ``re:…`` (``re:^(Add|Delete)Alarm$``). Several may be given comma-separated. ``app`` keeps
    templates whose ``app_names`` include that label (case-insensitive). Raises
    :class:`TaskError` when nothing matches.
    """
    if isinstance(patterns, str):
        patterns = [p.strip() for p in patterns.split(",") if p.strip()]
    pats = list(patterns or ["*"])
    names = []
    for name, cls in registry().items():
        if app is not None and app.casefold() not in {a.casefold() for a in cls.app_names}:
            continue
        if any(_matches(name, p) for p in pats):
            names.append(name)
    if not names:
        raise TaskError(
            f"no SimPhone task matches {', '.join(pats)!r}" + (f" in app {app!r}" if app else ""),
            hint="list them: agent-runtime simphone tasks; patterns are globs or re:REGEX",
        )
    return names


def _matches(name: str, pattern: str) -> bool:
    if pattern.startswith("re:"):
        try:
            return re.search(pattern[3:], name) is not None
        except re.error as exc:
            raise TaskError(f"bad task regex {pattern[3:]!r}: {exc}") from None
    return fnmatch.fnmatchcase(name.casefold(), pattern.casefold())


def _digest(task: Task) -> bytes:
    return hashlib.sha256(f"{task.name}|{task.params_key()}".encode()).digest()


def split_of(task: Task) -> Literal["train", "test"]:
    """The split an instance belongs to (see the module docstring)."""
    return "test" if int.from_bytes(_digest(task)[:8], "big") % TEST_MODULUS == 0 else "train"


def held_out_part(task: Task) -> Literal["selection", "final"]:
    """Which half of ``test`` a test instance is in (module docstring)."""
    return "selection" if int.from_bytes(_digest(task)[8:16], "big") % 2 == 0 else "final"


def in_split(task: Task, split: Split) -> bool:
    """Whether ``task`` belongs to ``split`` (``all`` holds every instance)."""
    if split == "all":
        return True
    if split in ("selection", "final"):
        return split_of(task) == "test" and held_out_part(task) == split
    return split_of(task) == split


def trainable(names: Iterable[str]) -> list[str]:
    """``names`` without the :data:`TEMPLATE_HELDOUT` templates, in order."""
    return [n for n in names if n not in TEMPLATE_HELDOUT]


def task_instances(
    names: Iterable[str], *, split: Split = "all", episodes: int = 1, seed: int = 0, distinct: bool = False
) -> list[Task]:
    """``episodes`` instances per template in ``split``, from seeds ``seed, seed+1, …``.

    With ``distinct`` a seed whose parameters repeat an earlier one's is skipped, so five
    episodes of a template are five different tasks, not one measured again (which would count
    one outcome several times in a success rate or a paired test). Some templates have only a
    few parameter sets per split; asking for more distinct instances than exist is an error.
    """
    if split not in SPLITS:
        raise TaskError(f"unknown split {split!r}", hint="use train, test, all, selection or final")
    if episodes < 1:
        raise TaskError(f"episodes must be at least 1, got {episodes}")
    out: list[Task] = []
    for name in names:
        found: list[Task] = []
        seen: set[str] = set()
        for s in range(seed, seed + MAX_SEED_SCAN):
            task = make_task(name, s)
            if in_split(task, split) and not (distinct and task.params_key() in seen):
                seen.add(task.params_key())
                found.append(task)
                if len(found) == episodes:
                    break
        if len(found) < episodes:
            raise TaskError(
                f"{name} has only {len(found)} {'distinct ' if distinct else ''}{split} instances "
                f"in seeds {seed}..{seed + MAX_SEED_SCAN - 1}",
                hint="ask for fewer episodes; the template's parameter space is small",
            )
        out.extend(found)
    return out


# -- free text and task ids -> instances ------------------------------------------------------
_TRAILING = ".!?;: "


def normalise_goal(text: str) -> str:
    """A goal compared with another: case-folded, whitespace collapsed, trailing punctuation dropped.

    >>> normalise_goal("  Turn OFF   Wi-Fi in Settings. ")
    'turn off wi-fi in settings'
    """
    return " ".join(text.casefold().split()).rstrip(_TRAILING)


def _goal_forms(task: Task) -> set[str]:
    """The normalised goal, and the goal without its trailing app qualifier (``… in Settings``,
    ``… in the Shop app``): where to do it is not part of what to do."""
    goal = normalise_goal(task.goal)
    forms = {goal}
    for app in task.app_names:
        for suffix in (f" in {app}", f" in the {app}", f" in the {app} app", f" in {app} app"):
            if goal.endswith(suffix.casefold()):
                forms.add(goal[: -len(suffix)].rstrip(_TRAILING))
    return forms


def _could_match(cls: type[Task], text: str) -> bool:
    """Every literal part of the template (its app qualifier excepted) occurs in ``text``."""
    import string

    for literal, *_ in string.Formatter().parse(cls.template):
        part = normalise_goal(literal)
        for app in cls.app_names:
            for suffix in (f"in {app}", f"in the {app}", f"in the {app} app", f"in {app} app"):
                if part.endswith(suffix.casefold()):
                    part = part[: -len(suffix)].strip()
        if part.strip() and part.strip() not in text:
            return False
    return True


def match_goal(text: str, *, seed: int | None = None) -> Task | None:
    """The task instance whose goal is ``text``, or None.

    Goals compare after :func:`normalise_goal`; a goal's trailing app qualifier may be left out
    ("Turn off Wi-Fi" is ``SettingsToggle``'s "Turn off Wi-Fi in Settings."). With ``seed`` only
    that seed's instances count; without, the lowest seed below :data:`MAX_SEED_SCAN` wins.

    >>> match_goal("turn off wi-fi").name
    'SettingsToggle'
    >>> match_goal("Send a message to Ana saying hi") is None
    True
    """
    wanted = normalise_goal(text)
    if not wanted:
        return None
    best: Task | None = None
    for name, cls in registry().items():
        if not _could_match(cls, wanted):
            continue
        seeds = [seed] if seed is not None else range(MAX_SEED_SCAN)
        for s in seeds:
            if best is not None and s >= best.seed:
                break
            task = make_task(name, s)
            if wanted in _goal_forms(task):
                best = task
                break
    return best


def nearest_goal(text: str, *, seeds: int = 20) -> Task | None:
    """The instance (seeds ``0..seeds-1``) whose goal reads most like ``text``, if any is close."""
    wanted = normalise_goal(text)
    goals: dict[str, Task] = {}
    for name in registry():
        for s in range(seeds):
            task = make_task(name, s)
            goals.setdefault(normalise_goal(task.goal), task)
    close = difflib.get_close_matches(wanted, list(goals), n=1, cutoff=0.6)
    return goals[close[0]] if close else None


def task_id(task: Task) -> str:
    """An instance's id, as ``agent-runtime run --task-id`` takes it: ``TEMPLATE/SEED``."""
    return f"{task.name}/{task.seed}"


def parse_task_id(text: str) -> tuple[str, int | None]:
    """``"ClockStartTimer/3"`` (or ``ClockStartTimer:3``) → ``("ClockStartTimer", 3)``;
    ``"ClockStartTimer"`` → ``("ClockStartTimer", None)``. The template must exist.

    >>> parse_task_id("SettingsToggle/4")
    ('SettingsToggle', 4)
    """
    name, sep, seed = text.strip().replace(":", "/").partition("/")
    if sep and not seed.strip().isdigit():
        raise TaskError(
            f"bad task id {text!r}: the seed must be a non-negative integer",
            hint="use TEMPLATE/SEED, e.g. SettingsToggle/4 (list them: agent-runtime simphone tasks)",
        )
    make_task(name)  # an unknown template raises, with close names
    return name, int(seed) if sep else None

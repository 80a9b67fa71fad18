"""Mutation fuzz of every role parser: junk never reads as Finished, an answer, a terminate or success.

From valid seed replies, a seeded ``random.Random`` builds at least 1,000 mutants per role:
truncation at every kind of boundary, emptied / swapped / duplicated / dropped sections, JSON
values of the wrong type, huge strings, deep nesting, control characters and line separators, lone surrogates,
out-of-range and non-finite coordinates, junk ``<tool_call>`` blocks, and decoys (an explicit
``terminate`` in the Thought, "not GOOD", …). Every mutant must either parse to a valid output or
raise :class:`ParseError` (what the role caller records and re-asks with); any other exception
fails. The *oracle* says when a verdict that ends or wins a run may come out, and it reads the
mutated text on its own terms — lines and key/value pairs — not through the parsers' section
splitting:

* Manager Finished — some line, after list/markup characters (and an inline ``Plan:``), is only
  "Finished" / "Done" / "Completed" / "The task is finished";
* Worker ``answer`` / ``terminate`` — the text outside planted decoys holds ``"action": "answer"``
  (``"terminate"`` or its alias ``"done"``; ``"status": "success"`` for a successful one);
* Reflector A — a line after the word "Outcome" starts with ``A`` or "success";
* step critic GOOD — a line after "Annotation" starts with GOOD;
* trajectory critic Correct — a line after "Verdict" starts with "Correct".

Notetaker and RAG outputs cannot end a run; their oracle is that nothing is invented (the notes
come from the reply) and the output types hold.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from agent_runtime.actions import MAX_COORDINATE, Answer, Terminate, to_screen
from agent_runtime.alignment import screen_actions
from agent_runtime.coords import CoordMapper, CoordSpace
from agent_runtime.errors import ParseError
from agent_runtime.memory.pipeline import MAX_QUERIES, parse_queries
from agent_runtime.role_outputs import ManagerOutput, NotetakerOutput, Outcome, ReflectorOutput, WorkerOutput
from agent_runtime.roles.manager import parse_manager
from agent_runtime.roles.notetaker import parse_notetaker
from agent_runtime.roles.reflector import parse_reflector
from agent_runtime.roles.worker import PLATFORM_ACTIONS, parse_worker
from agent_runtime.simphone import SimPhone
from agent_runtime.trainers.critics.step import StepCriticOutput, parse_step_critic
from agent_runtime.trainers.critics.trajectory import TrajectoryChannelOutput, parse_trajectory_verdict
from tests.doubles import manager_reply, notetaker_reply, reflector_reply, worker_reply

MUTANTS_PER_ROLE = 1100
SEED = 20260517
OBS = SimPhone(seed=0).observe()  # the launcher; its indexed tree names elements 3..24
MAPPER = CoordMapper(space=CoordSpace.PIXELS_RESIZED, screen=OBS.size)


def _step(label: str, summary: str = "Tapped the Wi-Fi row.") -> str:
    return f"### Analysis ###\nThe tap opened Wi-Fi.\n### Summary ###\n{summary}\n### Annotation ###\n{label}"


def _verdict(verdict: str) -> str:
    return f"### Reasoning ###\nLooked at the final screen.\n### Verdict ###\n{verdict}"


def _tool_call(arguments: dict[str, Any]) -> str:
    call = json.dumps({"name": "mobile_use", "arguments": arguments})
    return f"<thinking>Next step.</thinking>\n<tool_call>{call}</tool_call>\n<conclusion>Did it.</conclusion>"


_WORKER_COMMON = [
    worker_reply({"action": "type", "text": 'héllo "quoted" {braces}'}),
    worker_reply({"action": "system_button", "button": "Back"}),
    worker_reply({"action": "open_app", "text": "Clock"}),
    worker_reply({"action": "wait", "time": 2}),
    worker_reply({"action": "answer", "text": "The total is $42.50"}),
    worker_reply({"action": "terminate", "status": "success"}),
    worker_reply({"action": "terminate", "status": "failure"}),
    _tool_call({"action": "terminate", "status": "success"}),
    _tool_call({"action": "answer", "text": "7 o'clock"}),
]

SEEDS: dict[str, list[str]] = {
    "manager": [
        manager_reply(["Open Settings", "Tap Wi-Fi", "Turn it off"], completed=["Went home"]),
        manager_reply("Finished", completed=["Turned Wi-Fi off"]),
        "### Thought ###\nDone.\n### Plan ###\n**Finished**\n",
        "### Thought ###\nok\n### Plan ###\n1. Open Clock\n2. Read the alarm\n3. Perform the `answer` action",
        "## Plan\n1) Open Settings\n2) Tap Network & internet",
        "Thought: all done\nPlan: The task is finished.",
    ],
    "worker_coords": [
        worker_reply({"action": "click", "coordinate": [546, 1204]}),
        worker_reply({"action": "long_press", "coordinate": [100.5, 200.25]}),
        worker_reply({"action": "swipe", "coordinate": [546, 1800], "coordinate2": [546, 600]}),
        _tool_call({"action": "click", "coordinate": [300, 400]}),
        '{"action": "click", "coordinate": [10, 20]}',
        *_WORKER_COMMON,
    ],
    "worker_index": [
        worker_reply({"action": "click", "index": 7}),
        worker_reply({"action": "long_press", "index": 5}),
        worker_reply({"action": "type", "text": "Ada", "index": 12}),
        _tool_call({"action": "click", "index": 13}),
        *_WORKER_COMMON,
    ],
    "reflector": [
        reflector_reply("A"),
        reflector_reply("A: Successful. The Wi-Fi page opened."),
        reflector_reply("B", "Opened the Clock app instead"),
        reflector_reply("C", "Nothing changed"),
        "### Screenshot Difference ###\nA dialog appeared.\n### Outcome ###\n(A) Successful\n"
        "### Progress Status ###\nWi-Fi page open\n### Error Description ###\nNone",
        "Outcome: B - wrong page",
    ],
    "notetaker": [
        notetaker_reply("- Order code: 7731\n- Seat 4B"),
        notetaker_reply("None"),
        "## Important Notes\n1. The alarm is at 7:30\n2. Gate 12",
    ],
    "rag": [
        "Android turn off Wi-Fi\nSettings Network & internet Wi-Fi toggle",
        '["clock app set alarm", "android alarm repeat"]',
        "Here are some queries:\n- query: Wi-Fi settings\n- 2. airplane mode",
        "NONE",
    ],
    "step_critic": [
        _step("GOOD"),
        _step("**HARMFUL** - it undid progress"),
        _step("NEUTRAL"),
        _step("good", summary=" ".join(f"w{i}" for i in range(40))),
    ],
    "trajectory_critic": [
        _verdict("Correct"),
        _verdict("**Correct**"),
        _verdict("Incorrect: it stopped early"),
    ],
}

# -- mutations ------------------------------------------------------------------------------------
_HEADING_LINE = re.compile(r"^[ \t]*(?:#{1,6}|\*\*)[^\n]*$|^[ \t]*[A-Z][A-Za-z ]{2,30}:[^\n]*$", re.MULTILINE)
_BOUNDARY = "\n{}[](),:\"' #*<>`-."
_CONTROL = [
    "\x00",
    "\u2028",
    "\u2029",
    "\x85",
    "\x0b",
    "\x0c",
    "\r",
    "\x1b",
    "\t",
    "\ufeff",
    "\u202e",
    "\x7f",
]
_SURROGATES = ["\ud800", "\udfff", "\\ud800", "\\udc00", "\ud83d"]
_BAD_NUMBERS = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-1e400",
    "-7",
    "1e30",
    str(10**30),
    "true",
    "false",
    "null",
    '"nan, 3"',
    '"inf"',
    '"12"',
    "1e-400",
    "99999999999",
    "0.5",
    "-0",
    "[]",
    "{}",
]
_BAD_POINTS = [
    '"nan, 3"',
    "[NaN, 3]",
    "[1, 2, 3]",
    "[]",
    "[[1, 2]]",
    '"12 34"',
    '{"x": 1}',
    '{"x": NaN, "y": 1}',
    "[true, false]",
    "[1e400, 5]",
    "[null, 5, 6, 7]",
    "[-Infinity, 2]",
    '["1", "2"]',
    "[100001, 5]",
    "[-3, 4]",
    f"[{10**30}, 1]",
    "[1, 2, 3, NaN]",
    '"(5, 6)"',
]
_WRONG_VALUES = [
    "null",
    "true",
    "0",
    "-1",
    '""',
    '"x"',
    "[]",
    "{}",
    "[1]",
    "NaN",
    "1e400",
    str(10**30),
    '{"action": "answer"}',
    '"' + "y" * 5000 + '"',
]
_JUNK_TOOL_CALLS = [
    "{",
    '{"name": "mobile_use"}',
    '{"name": "mobile_use", "arguments": "{{"}',
    '{"name": "mobile_use", "arguments": {"action": "terminate"}}',
    '{"name": "mobile_use", "arguments": {"action": "answer", "text": ""}}',
    '{"name": "mobile_use", "arguments": {"action": "click", "coordinate": [NaN, 1]}}',
    '{"name": "mobile_use", "arguments": [1, 2]}',
    "null",
    "[1, 2]",
    "<tool_call>",
    '{"arguments": {"action": "fly"}}',
    "\x00\u2028",
]
_NOISE = ["###", "### ###", "## Plan", "Plan:", "Outcome:", "### Action ###", "{", "}", "```", "```json",
          "\n", "None", "A", "B", "C", "1.", "-", ":", '{"action": ', "\\", "Finished", "GOOD", "Correct",
          "### Annotation ###", "### Verdict ###", "### Important Notes ###"]  # fmt: skip


def _boundaries(text: str) -> list[int]:
    return [i for i, ch in enumerate(text) if ch in _BOUNDARY] or [0]


def _blocks(text: str) -> list[tuple[int, int]]:
    """Spans from each heading line to the next."""
    starts = [m.start() for m in _HEADING_LINE.finditer(text)]
    return [(s, starts[i + 1] if i + 1 < len(starts) else len(text)) for i, s in enumerate(starts)]


def truncate_anywhere(rng: random.Random, text: str) -> str:
    return text[: rng.randint(0, len(text))]


def truncate_at_boundary(rng: random.Random, text: str) -> str:
    cut = rng.choice(_boundaries(text)) + rng.choice((0, 1))
    return text[:cut]


def empty_section(rng: random.Random, text: str) -> str:
    blocks = _blocks(text)
    if not blocks:
        return text
    start, end = rng.choice(blocks)
    line_end = text.find("\n", start, end)
    keep = end if line_end == -1 else line_end + 1
    if line_end == -1:  # an inline "Plan: …" heading: keep only the name and its colon
        colon = text.find(":", start, end)
        keep = colon + 1 if colon != -1 else end
    return text[:keep] + rng.choice(("", "\n", "None\n", "   \n")) + text[end:]


def swap_sections(rng: random.Random, text: str) -> str:
    blocks = _blocks(text)
    if len(blocks) < 2:
        return text
    i, j = sorted(rng.sample(range(len(blocks)), 2))
    (a0, a1), (b0, b1) = blocks[i], blocks[j]
    block_a, block_b = text[a0:a1], text[b0:b1]
    return text[:a0] + block_b + text[a1:b0] + block_a + text[b1:]


def duplicate_heading(rng: random.Random, text: str) -> str:
    headings = [m.group(0) for m in _HEADING_LINE.finditer(text)]
    if not headings:
        return text
    pos = rng.choice(_boundaries(text) + [len(text)])
    extra = rng.choice(("", "\n", "\nNone\n", "\n" + rng.choice(_NOISE) + "\n"))
    return text[:pos] + "\n" + rng.choice(headings) + extra + "\n" + text[pos:]


def drop_heading(rng: random.Random, text: str) -> str:
    lines = list(_HEADING_LINE.finditer(text))
    if not lines:
        return text
    m = rng.choice(lines)
    return text[: m.start()] + text[m.end() :]


def wrong_type(rng: random.Random, text: str) -> str:
    """A JSON value (after some ``"key":``) replaced by a value of another type."""
    keys = list(re.finditer(r"""(["'])(\w+)\1\s*:\s*""", text))
    if not keys:
        return text
    m = rng.choice(keys)
    rest = text[m.end() :]
    value = re.match(r"""\[[^\]]*\]|"(?:\\.|[^"\\])*"|'[^']*'|[^,}\]]*""", rest)
    span = value.end() if value else 0
    return text[: m.end()] + rng.choice(_WRONG_VALUES) + rest[span:]


def bad_coordinate(rng: random.Random, text: str) -> str:
    points = list(re.finditer(r"\[\s*-?[\d.]+\s*,\s*-?[\d.]+\s*\]", text))
    if points and rng.random() < 0.5:
        m = rng.choice(points)
        return text[: m.start()] + rng.choice(_BAD_POINTS) + text[m.end() :]
    numbers = list(re.finditer(r"-?\d+(?:\.\d+)?", text))
    if not numbers:
        return text
    m = rng.choice(numbers)
    return text[: m.start()] + rng.choice(_BAD_NUMBERS) + text[m.end() :]


def huge_string(rng: random.Random, text: str) -> str:
    pos = rng.randint(0, len(text))
    # Runs of blanks and markup once made the heading and verdict regexes backtrack for minutes.
    filler = rng.choice(("x", "ab ", "{", "[", "\n", "1. a\n", '"', " ", "\t", "*", "[ (", "#"))
    return text[:pos] + filler * rng.randint(2_000, 40_000 // len(filler)) + text[pos:]


def deep_nesting(rng: random.Random, text: str) -> str:
    """Brackets nested past the JSON decoder's recursion limit, around or inside the reply."""
    opener, closer = rng.choice((("[", "]"), ("{", "}"), ('{"a": ', "}"), ("[[", "]")))
    depth = rng.randint(500, 4_000)
    pos = rng.choice((0, rng.randint(0, len(text))))
    return text[:pos] + opener * depth + text[pos:] + closer * rng.choice((0, depth))


def control_chars(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 6)):
        chars.insert(rng.randint(0, len(chars)), rng.choice(_CONTROL))
    return "".join(chars)


def surrogate(rng: random.Random, text: str) -> str:
    pos = rng.randint(0, len(text))
    return text[:pos] + rng.choice(_SURROGATES) + text[pos:]


def junk_tool_call(rng: random.Random, text: str) -> str:
    pos = rng.choice((0, len(text), rng.randint(0, len(text))))
    close = rng.choice(("</tool_call>", "", "</tool_call></tool_call>"))
    return text[:pos] + "<tool_call>" + rng.choice(_JUNK_TOOL_CALLS) + close + text[pos:]


def noise(rng: random.Random, text: str) -> str:
    pos = rng.randint(0, len(text))
    return text[:pos] + rng.choice(_NOISE) + rng.choice(("", " ", "\n")) + text[pos:]


def delete_span(rng: random.Random, text: str) -> str:
    pos = rng.randint(0, len(text))
    return text[:pos] + text[pos + rng.randint(1, 40) :]


MUTATIONS: list[Callable[[random.Random, str], str]] = [
    truncate_anywhere,
    truncate_at_boundary,
    empty_section,
    swap_sections,
    duplicate_heading,
    drop_heading,
    wrong_type,
    bad_coordinate,
    huge_string,
    deep_nesting,
    control_chars,
    surrogate,
    junk_tool_call,
    noise,
    delete_span,
]
_WEIGHTS = [3, 4, 4, 2, 2, 2, 4, 4, 1, 1, 3, 2, 3, 3, 3]


# -- decoys: an explicit verdict where it does not count --------------------------------------------
_ACTION_SECTION = re.compile(r"(### Action ###\n)(.*?)(\n\n### Description)", re.DOTALL)
_DECOY_ACTIONS = ['{"action": "terminate", "status": "success"}', '{"action": "answer", "text": "42"}']


def worker_decoy(rng: random.Random, text: str) -> tuple[str, list[str]]:
    """A terminate/answer JSON in the Thought (or ``<thinking>``) of a reply whose action is gone."""
    decoy = rng.choice(_DECOY_ACTIONS)
    if "<tool_call>" in text:
        text = re.sub(r"<tool_call>.*?</tool_call>", rng.choice(("", "<tool_call></tool_call>")), text)
        return text.replace("<thinking>", f"<thinking>I could {decoy} but ", 1), [decoy]
    text = _ACTION_SECTION.sub(
        lambda m: m.group(1) + rng.choice(("", "None", "tap it", "{")) + m.group(3), text
    )
    text = text.replace("### Thought ###\n", f"### Thought ###\nNot yet:\n{decoy}\n", 1)
    return text, [decoy]


_SECTION_DECOYS = {
    "manager": ("### Plan ###", "### Plan ###\n", "I have Finished nothing yet; the plan is Done when"),
    "reflector": ("### Outcome ###", "### Outcome ###\n", "The outcome is A, I think"),
    "step_critic": ("### Annotation ###", "### Annotation ###\n", "not GOOD"),
    "trajectory_critic": ("### Verdict ###", "### Verdict ###\n", "Not Correct"),
}


def section_decoy(role: str, rng: random.Random, text: str) -> tuple[str, list[str]]:
    """The deciding section replaced by prose that mentions the verdict without giving it."""
    heading, prefix, decoy = _SECTION_DECOYS[role]
    start = text.find(heading)
    if start == -1:
        return text, []
    end = text.find("###", start + len(heading))
    end = len(text) if end == -1 else end
    return text[:start] + prefix + decoy + rng.choice(("\n", "\n\n", ".\n")) + text[end:], []


def mutate(role: str, rng: random.Random) -> tuple[str, list[str]]:
    text = rng.choice(SEEDS[role])
    decoys: list[str] = []
    if role.startswith("worker") and rng.random() < 0.1:
        text, decoys = worker_decoy(rng, text)
    elif role in _SECTION_DECOYS and rng.random() < 0.08:
        text, decoys = section_decoy(role, rng, text)
    else:
        for op in rng.choices(MUTATIONS, weights=_WEIGHTS, k=rng.randint(1, 3)):
            text = op(rng, text)
    return text, decoys


# -- oracles: when may a run-ending verdict come out? -----------------------------------------------
_LINE_FINISHED = re.compile(
    r"^[\W\d_]*(?:(?:step|subgoal)\s*\d*[\W_]*)?(?:plan[\W_]*)?(?:the\s+)?(?:task\s+|request\s+)?(?:is\s+)?"
    r"(?:finished|done|completed)[\W_]*$",
    re.IGNORECASE,
)


def _lines_after(text: str, word: str) -> list[str]:
    at = text.lower().find(word)
    return [] if at == -1 else text[at:].splitlines()


def _says_finished(text: str) -> bool:
    return any(_LINE_FINISHED.match(line) for line in text.splitlines())


def _says_a(text: str) -> bool:
    lead = re.compile(r"^[\W_]*(?:outcome[\W_]*)?(?:option[\W_]*)?(?:[Aa](?![A-Za-z0-9])|success)", re.I)
    return any(lead.match(line) for line in _lines_after(text, "outcome"))


def _says_good(text: str) -> bool:
    lead = re.compile(r"^[\W_]*(?:annotation[\W_]*)?good\b", re.IGNORECASE)
    return any(lead.match(line) for line in _lines_after(text, "annotation"))


def _says_correct(text: str) -> bool:
    lead = re.compile(r"^[\W_]*(?:verdict[\W_]*)?correct\b", re.IGNORECASE)
    return any(lead.match(line) for line in _lines_after(text, "verdict"))


def _json_pair(key: str, value: str) -> re.Pattern[str]:
    return re.compile(rf"""{key}\\?["']?\s*:\s*\\?["']\s*(?:{value})\s*\\?["']""", re.IGNORECASE)


_SAYS_ANSWER = _json_pair("action(?:_type)?", "answer")
_SAYS_TERMINATE = _json_pair("action(?:_type)?", "terminate|done")
_SAYS_SUCCESS = _json_pair("status", "success")


class OracleViolation(AssertionError):
    """A parsed output claims more than the mutated reply says."""


def _check_worker(out: WorkerOutput, text: str, decoys: list[str], *, indices: bool) -> None:
    action = out.action
    assert action.action in PLATFORM_ACTIONS["mobile"]
    outside = text
    for decoy in decoys:
        outside = outside.replace(decoy, "")
    if isinstance(action, Answer):
        if not _SAYS_ANSWER.search(outside):
            raise OracleViolation("an answer the reply does not give")
        assert action.text.strip()
    if isinstance(action, Terminate):
        if not _SAYS_TERMINATE.search(outside):
            raise OracleViolation("a terminate the reply does not give")
        if action.status == "success" and not _SAYS_SUCCESS.search(outside):
            raise OracleViolation("a successful terminate the reply does not claim")
    for x, y in action.points().values():
        assert math.isfinite(x) and math.isfinite(y) and 0 <= x <= MAX_COORDINATE and 0 <= y <= MAX_COORDINATE
    if action.by_index:
        assert indices
        screen_actions(action, OBS)  # an accepted index resolves on the screen it was checked on
    else:
        screen = to_screen(action, MAPPER)  # and coordinates map without a crash
        for x, y in screen.points().values():
            assert 0 <= x < OBS.size.width and 0 <= y < OBS.size.height


def check(role: str, text: str, decoys: list[str]) -> tuple[Any, str]:
    """Parse one mutant; return (output, verdict word) or raise ParseError / an assertion."""
    if role == "manager":
        m = parse_manager(text)
        assert isinstance(m, ManagerOutput) and m.finished == (not m.plan)
        if m.finished and not _says_finished(text):
            raise OracleViolation("Finished though no line says so")
        return m, "finished" if m.finished else ""
    if role in ("worker_coords", "worker_index"):
        indices = role == "worker_index"
        w = parse_worker(text, screen=OBS if indices else None, indices=indices)
        _check_worker(w, text, decoys, indices=indices)
        return w, w.action.action if w.action.action in ("answer", "terminate") else ""
    if role == "reflector":
        r = parse_reflector(text)
        assert isinstance(r, ReflectorOutput)
        if r.outcome is Outcome.A and not _says_a(text):
            raise OracleViolation("A though no line after 'Outcome' says A")
        return r, "A" if r.success else ""
    if role == "notetaker":
        n = parse_notetaker(text)
        assert isinstance(n, NotetakerOutput)
        clean = re.sub("[\ud800-\udfff]", "\ufffd", text)
        assert n.notes in clean, "notes that the reply does not contain"
        return n, ""
    if role == "rag":
        queries = parse_queries(text)
        assert len(queries) <= MAX_QUERIES and all(isinstance(q, str) and q for q in queries)
        return queries, ""
    if role == "step_critic":
        s = parse_step_critic(text)
        assert isinstance(s, StepCriticOutput) and len(s.summary.split()) <= 30
        if s.annotation == "GOOD" and not _says_good(text):
            raise OracleViolation("GOOD though no line after 'Annotation' starts with it")
        return s, "GOOD" if s.annotation == "GOOD" else ""
    t = parse_trajectory_verdict(text)
    assert isinstance(t, TrajectoryChannelOutput)
    if t.verdict == "Correct" and not _says_correct(text):
        raise OracleViolation("Correct though no line after 'Verdict' starts with it")
    return t, "Correct" if t.verdict == "Correct" else ""


@dataclass
class Tally:
    tried: int = 0
    parsed: int = 0
    format_errors: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


def fuzz(role: str) -> Tally:
    rng = random.Random(f"{SEED}-{role}")
    tally = Tally()
    for _ in range(MUTANTS_PER_ROLE):
        text, decoys = mutate(role, rng)
        tally.tried += 1
        try:
            out, verdict = check(role, text, decoys)
            if not isinstance(out, list):
                out.model_dump_json()  # every parsed output can be written to a trace
        except ParseError:
            tally.format_errors += 1
            continue
        except Exception as exc:  # noqa: BLE001 - any other exception is the failure being looked for
            tally.failures.append(f"{type(exc).__name__}: {exc}\n  reply: {text[:300]!r}")
            continue
        tally.parsed += 1
        if verdict:
            tally.verdicts[verdict] = tally.verdicts.get(verdict, 0) + 1
    return tally


#: The run-ending verdicts each role must still produce when the reply does say them (so the
#: oracle is exercised, not vacuous).
EXPECTED_VERDICTS = {
    "manager": {"finished"},
    "worker_coords": {"answer", "terminate"},
    "worker_index": {"answer", "terminate"},
    "reflector": {"A"},
    "notetaker": set(),
    "rag": set(),
    "step_critic": {"GOOD"},
    "trajectory_critic": {"Correct"},
}


@pytest.mark.parametrize("role", list(SEEDS))
def test_mutated_replies_parse_or_are_format_errors_and_never_invent_success(role):
    for seed_reply in SEEDS[role]:  # the seeds themselves are valid replies
        check(role, seed_reply, [])
    tally = fuzz(role)
    print(
        f"{role}: {tally.tried} mutants, {tally.parsed} parsed, {tally.format_errors} format errors, "
        f"verdicts {tally.verdicts}"
    )
    assert tally.tried >= 1000 and tally.parsed + tally.format_errors + len(tally.failures) == tally.tried
    assert not tally.failures, f"{len(tally.failures)} failures:\n" + "\n".join(tally.failures[:10])
    assert tally.parsed >= tally.tried // 20, tally
    # RAG query parsing never refuses: an empty list falls back to the instruction as the query.
    assert role == "rag" or tally.format_errors >= tally.tried // 20, tally
    assert EXPECTED_VERDICTS[role] <= set(tally.verdicts), tally.verdicts


@pytest.mark.parametrize(
    ("role", "reply"),
    [
        ("manager", "### Thought ###\nx\n### Plan ###\n"),
        ("manager", "### Plan ###\nNone"),
        (
            "worker_coords",
            '### Thought ###\n{"action": "terminate", "status": "success"}\n### Action ###\nclick',
        ),
        ("worker_coords", '<thinking>{"action": "answer", "text": "42"}</thinking><tool_call>{</tool_call>'),
        ("worker_coords", '### Action ###\n{"action": "click", "coordinate": [NaN, 3]}'),
        ("worker_coords", '### Action ###\n{"action": "click", "coordinate": "nan, 3"}'),
        ("worker_coords", '### Action ###\n{"action": "click", "coordinate": [1e400, 3]}'),
        ("worker_coords", '### Action ###\n{"action": "click", "coordinate": [true, 3]}'),
        ("worker_coords", f'### Action ###\n{{"action": "click", "coordinate": [{10**30}, 3]}}'),
        (
            "worker_coords",
            '### Action ###\n{"action": "swipe", "coordinate": [1, 2], "coordinate2": [-Infinity, 2]}',
        ),
        ("worker_coords", '### Action ###\n{"action": "wait", "time": NaN}'),
        ("worker_coords", '### Action ###\n{"action": "answer", "text": "  "}'),
        ("worker_index", '### Action ###\n{"action": "click", "index": true}'),
        ("worker_index", '### Action ###\n{"action": "click", "index": 1e400}'),
        ("reflector", "### Outcome ###\nA, B or C\n### Error Description ###\nNone"),
        ("reflector", "### Outcome ###\nA new page opened but it is the wrong one"),
        ("reflector", "### Outcome ###\n\n### Error Description ###\nA"),
        ("step_critic", "### Annotation ###\nnot GOOD"),
        ("trajectory_critic", "### Verdict ###\nCorrect or Incorrect"),
    ],
)
def test_known_junk_is_a_format_error(role, reply):
    """The issue's cases, each a recorded format error rather than a crash or a success."""
    with pytest.raises(ParseError):
        check(role, reply, [])

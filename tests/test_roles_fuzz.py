"""Fuzz: malformed and random model replies never crash a parser or a run."""

from __future__ import annotations

import random
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_runtime.errors import ParseError
from agent_runtime.roles.manager import parse_manager
from agent_runtime.roles.notetaker import parse_notetaker
from agent_runtime.roles.reflector import parse_reflector
from agent_runtime.roles.worker import parse_worker
from agent_runtime.runtime import Runtime
from agent_runtime.simphone import SimPhone
from agent_runtime.traces import load_run
from tests.doubles import ScriptedChatModel, manager_reply, notetaker_reply, reflector_reply, worker_reply
from tests.test_graph import make_config

PARSERS = {
    "manager": parse_manager,
    "worker": parse_worker,
    "desktop_worker": lambda t: parse_worker(t, platform="desktop"),
    "reflector": parse_reflector,
    "notetaker": parse_notetaker,
}

VALID = [
    manager_reply(["Open Settings", "Tap Wi-Fi"], completed=["Went home"]),
    manager_reply("Finished"),
    worker_reply({"action": "click", "coordinate": [10, 20]}),
    worker_reply({"action": "swipe", "coordinate": [1, 2], "coordinate2": [3, 4]}),
    worker_reply({"action": "type", "text": 'héllo "quoted" {braces}'}),
    '<thinking>x</thinking><tool_call>{"name": "mobile_use", "arguments": {"action": "wait", "time": 2}}'
    "</tool_call>",
    reflector_reply("B", "wrong page"),
    notetaker_reply("- code 1234\n- seat 4B"),
]
NOISE = [
    "###",
    "### ###",
    "## Plan",
    "Plan:",
    "Outcome:",
    "### Action ###",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    "```",
    "```json",
    "<tool_call>",
    "</tool_call>",
    "\n",
    "\x00",
    "\u202e",
    "🙂",
    "None",
    "A",
    "B",
    "C",
    "Finished",
    "1.",
    "-",
    ":",
    '{"action": ',
    '"coordinate": [',
    "NaN",
    "1e999",
    "-0",
    "null",
    "True",
    "{'a': {'b': {'c': ",
    "\\",
    "\\u12",
]


def mutate(rng: random.Random, text: str) -> str:
    """Random edits of a valid reply: deletions, duplications, noise insertions, truncation."""
    chars = list(text)
    for _ in range(rng.randint(1, 8)):
        op = rng.random()
        pos = rng.randint(0, len(chars))
        if op < 0.3 and chars:
            del chars[pos : pos + rng.randint(1, 12)]
        elif op < 0.6:
            chars[pos:pos] = list(rng.choice(NOISE))
        elif op < 0.8 and chars:
            start = rng.randint(0, len(chars) - 1)
            chars[pos:pos] = chars[start : start + rng.randint(1, 30)]
        else:
            chars = chars[: rng.randint(0, len(chars))]
    return "".join(chars)


def random_reply(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.55:
        return mutate(rng, rng.choice(VALID))
    if kind < 0.75:
        return "".join(rng.choice(NOISE) + rng.choice(["", " ", "\n"]) for _ in range(rng.randint(0, 40)))
    if kind < 0.85:
        return "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 400)))
    if kind < 0.9:
        depth = rng.randint(50, 3000)
        return "### Action ###\n" + "{" * depth + '"action": "click"' + "}" * depth
    if kind < 0.95:
        return rng.choice(VALID) * rng.randint(2, 200)
    return "### Plan ###\n" + "\n".join(f"{i}. step {i}" for i in range(rng.randint(0, 500)))


def check(parser, text: str) -> None:
    try:
        parser(text)
    except ParseError:
        pass  # the only acceptable failure: a named parse error the graph records and re-asks with


def test_1000_random_replies_through_every_parser():
    rng = random.Random(20261122)
    for _ in range(1000):
        text = random_reply(rng)
        for parser in PARSERS.values():
            check(parser, text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=600))
def test_arbitrary_text_through_every_parser(text):
    for parser in PARSERS.values():
        check(parser, text)


@pytest.mark.parametrize("seed", range(4))
def test_graph_runs_on_garbage_end_cleanly(tmp_path, seed):
    rng = random.Random(seed)
    lock_free_rng = {
        role: random.Random(seed * 10 + i)
        for i, role in enumerate(("manager", "worker", "reflector", "notetaker"))
    }

    def reply(role):
        def make(call):
            r = lock_free_rng[role]
            # Mostly garbage, sometimes valid, so every branch of the loop gets exercised.
            if r.random() < 0.35:
                return {
                    "manager": manager_reply(["Tap something"]),
                    "worker": worker_reply(
                        {"action": "click", "coordinate": [r.randint(0, 1092), r.randint(0, 2408)]}
                    ),
                    "reflector": reflector_reply(r.choice("ABC")),
                    "notetaker": notetaker_reply(f"- note {r.randint(0, 9)}"),
                }[role]
            return random_reply(r)

        return make

    model = ScriptedChatModel(
        script={role: reply(role) for role in ("manager", "worker", "reflector", "notetaker")}
    )
    rt = Runtime(
        make_config(max_steps=6, reask=1),
        models=dict.fromkeys(("manager", "worker", "reflector", "notetaker"), model),
        runs_dir=tmp_path,
    )
    result = rt.run("Turn on Wi-Fi", device=SimPhone(seed=rng.randint(0, 100)))
    assert result.status in {"completed", "failed", "gave_up", "max_steps"}, result.error
    loaded = load_run(result.run_dir)
    assert loaded.run.status == result.status and len(loaded.steps) == result.steps
    assert len(loaded.calls) == len(model.calls)

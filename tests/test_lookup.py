"""Lookup decoding's drafts (agent_runtime.models.lookup): what follows the last tokens elsewhere."""

from __future__ import annotations

from agent_runtime.models.lookup import Drafts, NgramIndex


def test_a_suffix_is_looked_up_where_it_occurred_before_not_at_the_end():
    index = NgramIndex([5, 6, 7, 8, 9, 1, 5, 6, 7])
    # the suffix (5, 6, 7) last occurred at the start, followed by 8, 9
    assert Drafts().draft(index, 2) == [8, 9]
    assert Drafts().draft(index, 10) == [8, 9, 1, 5, 6, 7]  # up to the end of the list
    index.extend([8])  # now (6, 7, 8) → 9, 1, …
    assert Drafts().draft(index, 3) == [9, 1, 5]


def test_the_longest_ngram_wins_and_a_lone_token_is_no_match():
    index = NgramIndex([1, 2, 40, 3, 2, 41, 1, 2])
    # (1, 2) occurred before (→ 40); a 3-gram (x, 1, 2) did not
    assert Drafts().draft(index, 1) == [40]
    assert Drafts().draft(NgramIndex([4, 9, 4]), 3) == []  # only 1-grams repeat
    assert Drafts().draft(NgramIndex([1, 2, 1, 2]), 0) == []


def test_recent_replies_are_drafted_from_newest_first_after_the_own_tokens():
    drafts = Drafts(size=2)
    drafts.remember([100, 101, 7, 8], [9, 10, 11])
    assert drafts.draft(NgramIndex([50, 7, 8]), 3) == [9, 10, 11]  # the prompt's tail leads into the reply
    drafts.remember([0], [7, 8, 12])
    assert drafts.draft(NgramIndex([50, 7, 8]), 3) == [12]  # the newest reply first
    assert drafts.draft(NgramIndex([7, 8, 13, 7, 8]), 1) == [13]  # the own tokens before any reply
    drafts.remember([0], [1])
    drafts.remember([0], [2])  # the pool keeps the two newest: both earlier replies are gone
    assert drafts.draft(NgramIndex([50, 7, 8]), 3) == []


def test_the_benchmark_puts_the_engine_with_lookup_beside_it_without() -> None:
    """``benchmarks/demo_model.py``'s ``lookup_ratio`` block, by hand: speed-ups on over off,
    seconds turned into speed-ups the right way round, replies compared one by one."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import demo_model

    off = {
        "single": {"call_tokens_per_s": 30.0, "decode_tokens_per_s": 40.0, "replies": ["a", "b"]},
        "aggregate": {"1": {"tokens_per_s": 20.0}, "8": {"tokens_per_s": 50.0}},
        "step_s": 4.4,
        "readme_task": {"run_s": 21.0},
        "eval_1": {"episodes_per_hour": 275.0},
    }
    on = {
        "single": {"call_tokens_per_s": 33.0, "decode_tokens_per_s": 40.0, "replies": ["a", "c"]},
        "aggregate": {"1": {"tokens_per_s": 25.0}, "8": {"tokens_per_s": 50.0}, "16": {"tokens_per_s": 9.0}},
        "step_s": 3.3,
        "readme_task": {"run_s": 17.5},
        "eval_1": {"episodes_per_hour": 330.0},
    }
    assert demo_model._lookup_ratio(off, on) == {
        "call_tokens_per_s": 1.1,  # 33 / 30
        "decode_tokens_per_s": 1.0,
        "identical_greedy_replies": "1/2",
        "aggregate_1": 1.25,  # 25 / 20; batch 16 has no figure without lookup
        "aggregate_8": 1.0,
        "step_s": 1.33,  # seconds: 4.4 / 3.3
        "readme_task_s": 1.2,  # 21 / 17.5
        "eval_1_episodes_per_hour": 1.2,  # 330 / 275
    }

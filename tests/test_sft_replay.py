"""SFT that adds without forgetting: earlier rows replayed per role, rows held aside for
validation, and the checkpoint kept that is best on them — the start's own weights included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_runtime.errors import TrainingError
from agent_runtime.trainers.data.datasets import mix_replay, replay_counts, split_validation
from tests.test_trainers import one_torch_thread  # noqa: F401  (autouse)

WORDS = ["apple", "river", "stone", "cloud", "tiger", "piano", "lemon", "candle", "rocket", "garden"]
WORDS += ["silver", "window"]


# -- the formulas, by hand ---------------------------------------------------------------------


def test_replay_counts_are_ratio_times_new_rows_per_role_capped_by_the_pool() -> None:
    # worker: 0.5 · 3 = 1.5 → 2 (halves round up); manager: 0.5 · 4 = 2, pool 1 → 1; notetaker:
    # no new rows → 0 although its pool has 7
    counts = replay_counts({"worker": 3, "manager": 4}, {"worker": 9, "manager": 1, "notetaker": 7}, 0.5)
    assert counts == {"manager": 1, "notetaker": 0, "worker": 2}
    assert replay_counts({"worker": 3}, {"worker": 9}, 0.0) == {"worker": 0}
    with pytest.raises(TrainingError, match="negative"):
        replay_counts({"worker": 3}, {"worker": 9}, -1.0)


def test_mix_replay_appends_a_seeded_draw_of_each_roles_earlier_rows() -> None:
    new = [("worker", "n1"), ("worker", "n2"), ("manager", "n3")]
    pool = [("worker", f"w{i}") for i in range(5)] + [("manager", f"m{i}") for i in range(3)]
    pool.append(("reflector", "r0"))
    mixed, counts = mix_replay(new, pool, ratio=2.0, seed=7, role=lambda row: row[0])
    # worker 2 · 2 = 4 of 5, manager 2 · 1 = 2 of 3, reflector none (no new reflector rows)
    assert counts == {"manager": 2, "reflector": 0, "worker": 4}
    assert mixed[:3] == new and len(mixed) == 3 + 4 + 2
    replayed = mixed[3:]
    assert sum(r == "worker" for r, _ in replayed) == 4 and sum(r == "manager" for r, _ in replayed) == 2
    assert len(set(replayed)) == 6 and set(replayed) <= set(pool)
    assert replayed == sorted(replayed, key=pool.index)  # the pool's order is kept
    again, _ = mix_replay(new, pool, ratio=2.0, seed=7, role=lambda row: row[0])
    assert again == mixed  # seeded


def test_split_validation_holds_aside_a_capped_seeded_share() -> None:
    train, held = split_validation(20, fraction=0.1, max_rows=32, seed=3)  # 0.1 · 20 = 2
    assert len(held) == 2 and sorted(train + held) == list(range(20)) and not set(train) & set(held)
    assert split_validation(20, fraction=0.1, max_rows=32, seed=3) == (train, held)
    assert len(split_validation(100, fraction=0.5, max_rows=8, seed=0)[1]) == 8  # the cap
    assert split_validation(4, fraction=0.1, max_rows=8, seed=0)[1] == []  # 0.4 → 0: none
    assert split_validation(2, fraction=0.9, max_rows=8, seed=0)[1].__len__() == 1  # one row trains
    assert split_validation(10, fraction=0.0, max_rows=8, seed=0) == (list(range(10)), [])


# -- an SFT stage on data the model already fits ------------------------------------------------


def _rows() -> Any:
    from datasets import Dataset

    from agent_runtime.trainers.data.datasets import assistant, sft_features

    rows = [
        {
            "prompt": [{"role": "user", "content": f"Item {i}: say the word"}],
            "completion": assistant(word, text_only=True),
        }
        for i, word in enumerate(WORDS)
    ]
    return Dataset.from_list(rows, features=sft_features(text_only=True))


def _success(model_dir: Path, tokenizer_dir: Path) -> float:
    """Share of rows whose whole reply the model predicts right (greedy, teacher-forced)."""
    import torch

    from agent_runtime.models.hf import load_tokenizer
    from agent_runtime.models.refs import resolve_model_ref
    from agent_runtime.trainers.hf import load_reference

    model = load_reference(resolve_model_ref(str(model_dir)))
    tokenizer = load_tokenizer(tokenizer_dir)
    right = 0
    for row in _rows():
        prompt = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=False)
        full = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=False)
        start = len(tokenizer(prompt).input_ids)
        ids = tokenizer(full, return_tensors="pt").input_ids
        with torch.no_grad():
            predicted = model(input_ids=ids).logits[0, start - 1 : -1].argmax(-1)
        right += int(bool((predicted == ids[0, start:]).all()))
    return right / len(WORDS)


@pytest.fixture(scope="module")
def fitted(tiny_lm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny LM trained until it answers every row right (loss ~0.03): a converged model."""
    import torch

    from agent_runtime.trainers.sft_config import SFTConfig
    from agent_runtime.trainers.sft_trainer import train_sft

    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("fitted") / "model"
    cfg = SFTConfig(
        base=str(tiny_lm_dir), output_dir=out, lora=False, learning_rate=3e-3, max_steps=150,
        batch_size=len(WORDS), progress=False,
    )  # fmt: skip
    train_sft(cfg, _rows())
    assert _success(out, tiny_lm_dir) == 1.0
    return out


@pytest.mark.train
def test_sft_on_data_the_model_fits_keeps_the_best_checkpoint_and_loses_nothing(
    fitted: Path, tiny_lm_dir: Path, tmp_path: Path
) -> None:
    """Continuing a converged model on the rows it already fits, with a step size that moves it
    (Adam moves every weight by about lr per step, whatever the gradient): the last step has
    forgotten rows (success 12/12 → below), the kept checkpoint — the best on the held-aside
    rows, the start included — has not."""
    from agent_runtime.trainers.sft_config import SFTConfig
    from agent_runtime.trainers.sft_trainer import train_sft

    def stage(out: Path, validation: float) -> dict[str, Any]:
        cfg = SFTConfig(
            base=str(fitted), output_dir=out, lora=False, learning_rate=1e-2, max_steps=20, batch_size=4,
            seed=1, validation_fraction=validation, evaluations=4, progress=False,
        )  # fmt: skip
        return train_sft(cfg, _rows()).extra

    last = stage(tmp_path / "last", 0.0)
    assert "validation" not in last
    assert _success(tmp_path / "last", tiny_lm_dir) < 1.0  # the fixture can show forgetting
    kept = stage(tmp_path / "kept", 0.25)
    validation = kept["validation"]
    assert validation["rows"] == 3  # 0.25 · 12
    assert [p["step"] for p in validation["points"]] == [0, 5, 10, 15, 20]
    losses = [p["loss"] for p in validation["points"]]
    best = validation["points"][losses.index(min(losses))]["step"]
    assert validation["best_step"] == best
    assert _success(tmp_path / "kept", tiny_lm_dir) >= _success(fitted, tiny_lm_dir) == 1.0


@pytest.mark.train
def test_distill_sft_replays_earlier_rows_per_role(tiny_lm_dir: Path, tmp_path: Path) -> None:
    """New rows from one template, earlier rows from another: replay_ratio 1 adds as many earlier
    rows as new ones, per role, and the manifest says how many."""
    from agent_runtime.trainers.data.samples import collect_samples
    from agent_runtime.trainers.demos.traces import DemoOptions, write_demos
    from agent_runtime.trainers.distill import DataOptions, distill
    from agent_runtime.trainers.sft_config import SFTConfig

    new, old = tmp_path / "new", tmp_path / "old"
    write_demos(DemoOptions(tasks="ClockReachTab", observation="ui_tree", prompts="compact"), new)
    write_demos(
        DemoOptions(tasks="SettingsToggle", episodes=3, observation="ui_tree", prompts="compact"), old
    )
    roles = ["manager", "worker"]
    count = {r: sum(s.role == r for s in collect_samples(new, [r]).samples) for r in roles}
    pool = {r: sum(s.role == r for s in collect_samples(old, [r]).samples) for r in roles}
    assert all(pool[r] >= count[r] > 0 for r in roles)
    cfg = SFTConfig(base=str(tiny_lm_dir), output_dir=tmp_path / "sft", role="manager,worker", max_steps=1)
    data = DataOptions(runs_dir=new, replay_dir=old, replay_ratio=1.0)
    data.filters.skip = ["reweight", "dedup"]  # every demo row counts once: the arithmetic stays exact
    manifest = distill("sft", cfg.model_copy(update={"progress": False}), data)
    replay = manifest.training.extra["replay"]
    assert replay["rows"] == count and replay["pool"] == sum(pool.values())
    assert manifest.data.train_rows == 2 * sum(count.values())
    # --max-samples bounds a role's rows with the replayed ones: 4 at ratio 1 = 2 new + 2 earlier
    capped = data.model_copy(update={"max_samples": 4, "overwrite": True})
    manifest = distill("sft", cfg.model_copy(update={"progress": False}), capped)
    assert manifest.training.extra["replay"]["rows"] == {"manager": 2, "worker": 2}
    assert manifest.data.train_rows == 8 and manifest.data.max_samples == 4

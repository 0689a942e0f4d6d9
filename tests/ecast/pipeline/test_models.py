"""Model backends: tiny T5 batched/seeded generation and CR, fine-tuning command, SmolLM2 smoke test."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from ecast.pipeline import backends, hf
from ecast.pipeline.run import TurnInput, run_turn
from tests.ecast.pipeline.conftest import t5_config


def test_t5_paraphrase_returns_n_sequences_per_input_and_is_seeded(tiny_t5):
    b = backends.get("paraphrase", "t5")
    params = {"model": str(tiny_t5), "num_return_sequences": 4, "max_new_tokens": 8, "seed": 3}
    out = b.paraphrase(["What is throat cancer?", "Why are bees dying?", "x"], params)
    assert [len(o) for o in out] == [4, 4, 4]
    assert out == b.paraphrase(["What is throat cancer?", "Why are bees dying?", "x"], params)
    assert out != b.paraphrase(["What is throat cancer?", "Why are bees dying?", "x"], {**params, "seed": 4})


def test_batched_and_one_at_a_time_greedy_generation_agree(tiny_t5):
    b = backends.get("cr", "t5")
    texts = ["Is throat cancer treatable?", "Why are honey bees dying?"]
    params = {"model": str(tiny_t5), "max_new_tokens": 8, "batch_size": 2}
    assert b.cr(texts, [[], []], params) == [b.cr([t], [[]], {**params, "batch_size": 1})[0] for t in texts]


def test_models_load_once_per_process(tiny_t5):
    backends.get("cr", "t5").cr(["a"], [[]], {"model": str(tiny_t5), "max_new_tokens": 2})
    size = hf.cache_size()
    backends.get("cqr", "t5").cqr([["b"]], ["c"], {"model": str(tiny_t5), "max_new_tokens": 2})
    assert hf.cache_size() == size


def test_a_missing_hub_model_fails_clearly_in_offline_mode(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(hf.ModelUnavailable, match="offline"):
        hf.load_seq2seq("castorini/t5-base-canard-does-not-exist")


def test_run_turn_keeps_full_context_on_first_turns(tiny_t5):
    first = run_turn(
        TurnInput("1_1", 1, "What is throat cancer?", "What is throat cancer?"), t5_config(tiny_t5), seed=1
    )
    assert first["outputs"] and all(o["raw"] == o["manual"] for o in first["outputs"])
    assert first["cr_of_manual"] is None and first["rewrite"] == "What is throat cancer?"
    later = run_turn(
        TurnInput("1_2", 2, "Is it treatable?", "Is throat cancer treatable?", ["What is throat cancer?"]),
        t5_config(tiny_t5),
        seed=1,
    )
    assert later["context_removed"] and later["cr_of_manual"]
    assert later["generated"] == 3 * len(later["sources"])  # 3 from each source
    if [s["source"] for s in later["sources"]] == ["m"]:  # the random model's r_i was dropped, with its reason
        assert sum(later["drops"]["cqr"].values()) == 1


def test_finetune_command_trains_a_few_steps_and_saves_a_loadable_model(tiny_t5, tmp_path):
    train = tmp_path / "pairs.jsonl"
    train.write_text(
        "\n".join(
            json.dumps({"input": f"What is item {i}? ||| Is it big?", "target": f"Is item {i} big?"}) for i in range(6)
        )
    )
    out = tmp_path / "trained"
    call_command(
        "finetune_t5",
        "--train",
        str(train),
        "--base",
        str(tiny_t5),
        "--output",
        str(out),
        "--max-steps",
        "3",
        "--batch-size",
        "2",
    )
    summary = json.loads((out / "ecast_training.json").read_text())
    assert summary["steps"] == 3 and len(summary["losses"]) == 3
    assert backends.get("cqr", "t5").cqr([["What is a bee?"]], ["Is it big?"], {"model": str(out), "max_new_tokens": 4})


def test_finetune_command_names_the_bad_line(tmp_path, tiny_t5):
    train = tmp_path / "bad.jsonl"
    train.write_text('{"input": "a", "target": "b"}\n{"input": "a"}\n')
    with pytest.raises(CommandError, match=r"bad.jsonl:2: 'input' and 'target'"):
        call_command("finetune_t5", "--train", str(train), "--base", str(tiny_t5), "--output", str(tmp_path / "o"))


@pytest.mark.slow
def test_smollm_backend_loads_from_its_package_and_paraphrases():
    usable, reason = backends.get("paraphrase", "smollm").status()
    assert usable, reason
    out = backends.get("paraphrase", "smollm").paraphrase(
        ["Why are so many bees dying?"], {"num_return_sequences": 2, "max_new_tokens": 16, "seed": 0}
    )
    assert len(out) == 1 and len(out[0]) == 2
    assert all(isinstance(t, str) for t in out[0]) and any(t.strip() for t in out[0])

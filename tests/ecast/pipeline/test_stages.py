"""Every stage of ``run_turn`` drops and counts outputs that are identical to their source, ungrammatical or
below the similarity floor; hand-worked with scripted backends (no model)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ecast.pipeline import backends
from ecast.pipeline.run import DEFAULT_CONFIG, TurnInput, min_similarity, run_turn, standalone_question

THROAT = TurnInput(
    "31_2", 2, "Is it treatable?", "Is throat cancer treatable?", ["What is throat cancer?"], ["What is throat cancer?"]
)


@dataclass
class Scripted:
    """A backend that answers from tables: the CQR output, the paraphrases of each source, the CR of each text."""

    rewrite: str = ""
    paraphrases: dict[str, list[str]] = field(default_factory=dict)
    removals: dict[str, str] = field(default_factory=dict)
    name: str = "scripted"
    stages: tuple[str, ...] = backends.STAGES

    def status(self):
        return True, "scripted"

    def cqr(self, histories, utterances, params):
        return [self.rewrite for _ in utterances]

    def paraphrase(self, sources, params):
        return [list(self.paraphrases.get(s, [])) for s in sources]

    def cr(self, texts, histories, params):
        return [self.removals.get(t, t) for t in texts]


@pytest.fixture
def scripted(monkeypatch):
    backend = Scripted()
    for stage in backends.STAGES:
        monkeypatch.setitem(backends.REGISTRY[stage], "scripted", backend)
    return backend


def _similar(a: list[str], b: list[str]) -> list[float]:
    """0.1 for anything about cookies, else 0.9."""
    return [0.1 if "cookies" in x or "cookies" in y else 0.9 for x, y in zip(a, b, strict=True)]


CONFIG = {
    "cqr": {"backend": "scripted"},
    "paraphrase": {"backend": "scripted", "sources": ["r", "m"]},
    "cr": {"backend": "scripted"},
    "clean": {"min_similarity": 0.5},
}


def test_every_stage_drops_and_counts_identical_ungrammatical_and_dissimilar_outputs(scripted):
    scripted.rewrite = "Is it treatable?"  # CQR resolved nothing: r_i = u_i is not paraphrased
    scripted.paraphrases = {
        "Is throat cancer treatable?": [
            "Is throat cancer treatable?",  # identical to its source
            "What are the of?",  # ungrammatical
            "Can throat cancer be cured?",
            "Can throat cancer be cured ?",  # near duplicate
            "Is throat cancer treatable with cookies?",  # below the floor
            "Can doctors treat throat cancer?",
            "Is there a treatment for throat cancer?",
        ]
    }
    scripted.removals = {
        "Can throat cancer be cured?": "Can it be cured?",
        "Can doctors treat throat cancer?": "Can doctors treat the?",  # broken: dropped, never shown
        # "Is there a treatment for throat cancer?" comes back unchanged although the turn needs its context
    }
    result = run_turn(THROAT, CONFIG, seed=0, similarity=_similar)
    assert [(o["manual"], o["raw"]) for o in result["outputs"]] == [("Can throat cancer be cured?", "Can it be cured?")]
    assert result["sources"] == [{"source": "m", "text": "Is throat cancer treatable?"}]
    assert result["drops"] == {
        "cqr": {"identical to source": 1},
        "paraphrase": {"identical to source": 1, "ungrammatical": 1, "near duplicate": 1, "below similarity floor": 1},
        "cr": {"ungrammatical": 1, "identical to source": 1},
    }
    by_text = {d["text"]: d for d in result["dropped"]}
    assert by_text["What are the of?"]["rules"] == [
        "no_content_word",
        "determiner_without_noun",
        "dangling_preposition",
    ]
    assert by_text["Can doctors treat the?"] == {
        "stage": "cr",
        "text": "Can doctors treat the?",
        "reason": "ungrammatical",
        "source": "Can doctors treat throat cancer?",
        "rules": ["determiner_without_noun"],
    }
    assert result["rejected_by_similarity"] == 1
    assert result["cr_outputs"] == [
        "Can it be cured?",
        "Can doctors treat the?",
        "Is there a treatment for throat cancer?",
    ]


def test_an_ungrammatical_or_dissimilar_rewrite_is_not_paraphrased(scripted):
    scripted.paraphrases = {"Is throat cancer treatable?": ["Can throat cancer be cured?"]}
    scripted.rewrite = "Is the?"
    result = run_turn(THROAT, CONFIG, seed=0, similarity=_similar)
    assert result["drops"]["cqr"] == {"ungrammatical": 1} and [s["source"] for s in result["sources"]] == ["m"]
    scripted.rewrite = "Is throat cancer treatable with cookies?"  # far from m_i
    result = run_turn(THROAT, CONFIG, seed=0, similarity=_similar)
    assert result["drops"]["cqr"] == {"below similarity floor": 1}
    scripted.rewrite = "Can throat cancer be treated?"
    result = run_turn(THROAT, CONFIG, seed=0, similarity=_similar)
    assert "cqr" not in result["drops"] and [s["source"] for s in result["sources"]] == ["r", "m"]


def test_a_turn_that_needs_no_context_keeps_raw_equal_to_manual(scripted):
    turn = TurnInput("31_3", 3, "What is throat cancer?", "What is throat cancer?", ["Is it treatable?"])
    scripted.rewrite = "What is throat cancer?"
    scripted.paraphrases = {"What is throat cancer?": ["Can you explain cancer of the throat?"]}
    result = run_turn(turn, CONFIG, seed=0, similarity=_similar)
    assert [(o["manual"], o["raw"]) for o in result["outputs"]] == [("Can you explain cancer of the throat?",) * 2]
    assert "cr" not in result["drops"]


def test_the_cr_floor_compares_the_pair_in_the_conversation(scripted):
    seen: list[tuple[str, str]] = []

    def similarity(a, b):
        seen.extend(zip(a, b, strict=True))
        return [0.9] * len(a)

    scripted.paraphrases = {"Is throat cancer treatable?": ["Can throat cancer be cured?"]}
    scripted.removals = {"Can throat cancer be cured?": "Can it be cured?"}
    run_turn(THROAT, CONFIG, seed=0, similarity=similarity)
    assert ("What is throat cancer? Can it be cured?", "What is throat cancer? Can throat cancer be cured?") in seen


def test_the_defaults_are_anaphora_context_removal_and_a_similarity_floor():
    assert DEFAULT_CONFIG["cr"]["backend"] == "anaphora" and min_similarity(DEFAULT_CONFIG) == 0.6
    assert min_similarity({}) == 0.6 and min_similarity({"clean": {"min_similarity": None}}) is None
    result = run_turn(
        TurnInput(
            "31_3", 3, "What are its symptoms?", "What are the symptoms of throat cancer?", ["What is throat cancer?"]
        ),
        {"paraphrase": {"backend": "rule", "params": {"num_return_sequences": 2}, "sources": ["m"]}},
        seed=0,
    )
    assert [o["raw"] for o in result["outputs"]] == [
        "Can you tell me what are its symptoms?",
        "I would like to know what are its symptoms.",
    ]


def test_the_entity_removal_baseline_runs_but_its_broken_outputs_are_dropped():
    config = {
        "paraphrase": {"backend": "rule", "params": {"num_return_sequences": 2}},
        "cr": {"backend": "entity_removal"},
    }
    turn = TurnInput(
        "31_3", 3, "What are its symptoms?", "What are the symptoms of throat cancer?", ["What is throat cancer?"]
    )
    result = run_turn(turn, config, seed=0)
    assert result["cr_of_manual"] == "What are the of?"  # Table 9 still scores the baseline as the paper does
    assert result["outputs"] == [] and result["drops"]["cr"] == {"ungrammatical": 4}  # 2 sources x 2


def test_a_paraphrase_whose_context_removal_fails_gives_its_place_to_the_next_best(scripted):
    scripted.rewrite = "Is it treatable?"
    scripted.paraphrases = {
        "Is throat cancer treatable?": ["Can throat cancer be cured?", "Can doctors treat throat cancer?"]
    }
    # the best-ranked paraphrase's context removal resolves nothing; the other one's works
    scripted.removals = {"Can doctors treat throat cancer?": "Can doctors treat it?"}
    config = {**CONFIG, "clean": {"min_similarity": 0.5, "keep": 1}}
    result = run_turn(THROAT, config, seed=0, similarity=_similar)
    assert [(o["manual"], o["raw"]) for o in result["outputs"]] == [
        ("Can doctors treat throat cancer?", "Can doctors treat it?")
    ]
    assert result["drops"]["cr"] == {"identical to source": 1}
    assert "paraphrase" not in result["drops"]  # nothing ranked out: the next best took the free place


def test_a_pair_whose_raw_turn_another_pair_already_has_is_dropped(scripted):
    scripted.rewrite = "Is it treatable?"
    scripted.paraphrases = {
        "Is throat cancer treatable?": ["Can throat cancer be cured?", "Can cancer of the throat be cured?"]
    }
    scripted.removals = {
        "Can throat cancer be cured?": "Can it be cured?",
        "Can cancer of the throat be cured?": "Can it be cured?",
    }
    result = run_turn(THROAT, CONFIG, seed=0, similarity=_similar)
    assert [o["raw"] for o in result["outputs"]] == ["Can it be cured?"]
    assert result["drops"]["cr"] == {"near duplicate": 1}


def test_the_manual_rewrite_is_paraphrased_without_the_reaction_that_opens_it():
    assert standalone_question("What?  No. Will eating plastic kill my cat?") == "Will eating plastic kill my cat?"
    assert standalone_question("Cool name! What are other fire-followers?") == "What are other fire-followers?"
    # what is left must ask on its own
    assert standalone_question("Oat seems popular now.  Why?") == "Oat seems popular now.  Why?"
    permaculture = "Permaculture sounds like organic farming, how are they related?"
    assert standalone_question(permaculture) == permaculture
    two = "What is the origin of funny cars? Why do they call them funny cars?"
    assert standalone_question(two) == two


def test_a_turn_whose_samples_only_copied_its_source_is_sampled_again_hotter(scripted, monkeypatch):
    calls: list[dict] = []

    def paraphrase(sources, params):
        calls.append(params)
        if len(calls) == 1:  # the first round copies the source
            return [["Is throat cancer treatable?", "Is throat cancer treatable ?"] for _ in sources]
        return [["Can throat cancer be cured?"] for _ in sources]

    scripted.rewrite = "Is it treatable?"
    scripted.removals = {"Can throat cancer be cured?": "Can it be cured?"}
    monkeypatch.setattr(scripted, "paraphrase", paraphrase)
    monkeypatch.setattr(scripted, "samples", True, raising=False)
    result = run_turn(THROAT, CONFIG, seed=0, similarity=_similar)
    assert [(o["manual"], o["raw"]) for o in result["outputs"]] == [("Can throat cancer be cured?", "Can it be cured?")]
    assert result["resampled"] and len(calls) == 2
    assert calls[1]["temperature"] == 1.0 and calls[1]["seeds"] != calls[0]["seeds"]
    # both rounds' samples are accounted for: the copies stay counted as drops
    assert result["generated"] == 3 and result["drops"]["paraphrase"] == {"identical to source": 2}


def test_a_backend_whose_outputs_do_not_vary_with_the_seed_is_not_asked_again(scripted):
    scripted.rewrite = "Is it treatable?"
    scripted.paraphrases = {"Is throat cancer treatable?": ["Is throat cancer treatable?"]}
    result = run_turn(THROAT, CONFIG, seed=0, similarity=_similar)
    assert result["outputs"] == [] and "resampled" not in result


def test_a_paraphrase_that_lowercased_the_sources_names_gets_their_spelling_back():
    from ecast.pipeline.clean import restore_case

    source = "In the EU, what is the role of Co-Extra in GMO food traceability in Europe?"
    out = "What is the role of co-extra in gmo food traceability in europe?"
    assert restore_case(out, [source]) == "What is the role of Co-Extra in GMO food traceability in Europe?"
    # function words are no names: "US" and "IT" leave "us" and "it" alone
    assert restore_case("Can it help us?", ["How does the US help IT teams?"]) == "Can it help us?"

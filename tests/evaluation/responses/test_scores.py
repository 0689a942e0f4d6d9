"""The response scores on hand-worked examples (castorini/nuggetizer's nugget scores, TREC 2024 RAG support)."""

from __future__ import annotations

import pytest

from evaluation.responses.scores import (
    SentenceSupport,
    citation_support,
    citation_table,
    nugget_scores,
    nugget_table,
    run_citation_support,
    run_nugget_scores,
)


def test_a_response_with_three_vital_and_two_okay_nuggets_scores_as_nuggetizer_defines():
    # vital: support, partial, not; okay: support, partial
    pairs = [
        ("vital", "support"),
        ("vital", "partial_support"),
        ("vital", "not_support"),
        ("okay", "support"),
        ("okay", "partial_support"),
    ]
    got = nugget_scores(pairs)
    # V_strict = 1 vital supported / 3 vital; A_strict = 2 supported / 5;
    # V = (1 + 0.5·1) / 3 = 0.5; A = (2 + 0.5·2) / 5 = 0.6
    assert got == pytest.approx({"V_strict": 1 / 3, "A_strict": 0.4, "V": 0.5, "A": 0.6})


def test_a_turn_without_vital_nuggets_scores_zero_on_the_vital_measures():
    assert nugget_scores([("okay", "support"), ("okay", "partial_support")]) == pytest.approx(
        {"V_strict": 0.0, "A_strict": 0.5, "V": 0.0, "A": 0.75}
    )


def test_an_unknown_assignment_is_refused():
    with pytest.raises(ValueError, match="unknown nugget assignment"):
        nugget_scores([("vital", "maybe")])


def test_a_run_scores_the_mean_over_its_responses_and_zero_without_any():
    rows = [
        {"V_strict": 1.0, "A_strict": 0.5, "V": 1.0, "A": 0.5},
        {"V_strict": 0.0, "A_strict": 0.0, "V": 0.5, "A": 0.25},
    ]
    assert run_nugget_scores(rows) == {"V_strict": 0.5, "A_strict": 0.25, "V": 0.75, "A": 0.375}
    assert run_nugget_scores([]) == {"V_strict": 0.0, "A_strict": 0.0, "V": 0.0, "A": 0.0}


SIX_SENTENCES = [
    SentenceSupport(cited=True, label="full"),  # weight 1
    SentenceSupport(cited=True, label="partial"),  # weight 0.5
    SentenceSupport(cited=True, label="none"),  # weight 0
    SentenceSupport(cited=True, label=None),  # first citation unjudged: out of both
    SentenceSupport(cited=False, label=None),  # no citation: recall's denominator, weight 0
    SentenceSupport(cited=True, label="not_needed"),  # needs no citation: out of both
]


def test_citation_support_reads_judged_first_citations_and_counts_uncited_sentences_in_recall():
    # precision = (1 + 0.5 + 0) / 3 judged = 0.5; recall = 1.5 / (3 judged + 1 uncited) = 0.375
    assert citation_support(SIX_SENTENCES) == {"precision": 0.5, "recall": 0.375}


def test_citation_support_of_an_answer_with_nothing_judged_is_zero():
    assert citation_support([SentenceSupport(cited=True, label=None)]) == {"precision": 0.0, "recall": 0.0}
    assert citation_support([]) == {"precision": 0.0, "recall": 0.0}


def test_a_runs_citation_figure_counts_a_judged_topic_it_did_not_answer_as_zero():
    per_topic = {"t1": {"precision": 0.5, "recall": 0.375}}
    # (0.5 + 0) / 2 topics; (0.375 + 0) / 2
    assert run_citation_support(per_topic, ["t1", "t2"]) == {"precision": 0.25, "recall": 0.1875}


def test_a_nugget_table_scores_only_fully_labelled_responses_and_counts_coverage():
    responses = [(1, 10, 100), (2, 10, 200), (3, 20, 100)]  # (response, run, turn)
    nuggets = [(1, 100, "vital"), (2, 100, "okay"), (3, 200, "vital")]
    labels = [
        (1, 1, "support"),
        (1, 2, "not_support"),
        (2, 3, "partial_support"),
        (3, 1, "support"),  # response 3 lacks nugget 2: not scored
        (3, 3, "support"),  # a nugget of another turn: ignored
    ]
    table = nugget_table(responses, nuggets, labels)
    assert table.per_response == {
        1: {"V_strict": 1.0, "A_strict": 0.5, "V": 1.0, "A": 0.5},
        2: {"V_strict": 0.0, "A_strict": 0.0, "V": 0.5, "A": 0.5},
    }
    assert table.per_run[10] == {"V_strict": 0.5, "A_strict": 0.25, "V": 0.75, "A": 0.5}
    assert table.per_run[20] == {"V_strict": 0.0, "A_strict": 0.0, "V": 0.0, "A": 0.0}
    assert table.run_coverage == {10: (2, 2, 2), 20: (0, 1, 1)}
    assert table.labelled == {1: 2, 2: 1, 3: 1}


def test_a_citation_table_reads_judged_topics_only_and_averages_over_them():
    responses = [(1, 10, 100), (2, 10, 200), (3, 20, 100), (4, 20, 300)]
    # response 1: six sentences as SIX_SENTENCES; response 3: two fully supported; response 4 is on an unjudged topic
    sentences = [(1, 11, "p1"), (1, 12, "p2"), (1, 13, "p3"), (1, 14, "p4"), (1, 15, None), (1, 16, "p5")]
    sentences += [(3, 31, "p1"), (3, 32, "p1"), (4, 41, "p1")]
    labels = [
        (11, "p1", "full"),
        (12, "p2", "partial"),
        (13, "p3", "none"),
        (16, "p5", "not_needed"),
        (31, "p1", "full"),
        (32, "p1", "full"),
        (12, "p9", "full"),  # not the first citation: never read
    ]
    table = citation_table(responses, sentences, labels, judged_turns=[100, 200])
    assert table.per_response[1] == {"precision": 0.5, "recall": 0.375, "sentences": 6, "cited": 5, "judged": 4}
    assert table.per_response[3]["precision"] == 1.0 and 4 not in table.per_response
    # run 10 answered 100 (0.5 / 0.375) and 200 (no sentences: 0 / 0) → / 2 judged topics
    assert table.per_run[10] == {"precision": 0.25, "recall": 0.1875}
    # run 20 answered 100 only (1 / 1); topic 200 counts 0 → / 2
    assert table.per_run[20] == {"precision": 0.5, "recall": 0.5}
    assert table.run_coverage == {10: (2, 2), 20: (1, 2)}

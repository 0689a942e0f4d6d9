"""The scores ecast computes from the real TREC RAG 2024 judgments equal an independent computation.

Nuggets: per-run V_strict / A_strict / V / A over the 21-topic NIST nugget-assignment file, against nuggetizer's
formulas written plainly here. Citation support: the 9-topic NIST file, against a plain loop and, for one run,
against figures worked out by hand."""

from __future__ import annotations

import json
from collections import defaultdict
from fractions import Fraction

import pytest
from django.urls import reverse

from evaluation.models import ResponseLabelSet
from evaluation.responses import selectors as sel
from tests import factories
from tests.ecast.imports.conftest import ok
from tests.evaluation.responses import helpers

pytestmark = pytest.mark.django_db


def nuggetizer_scores(nuggets: list[dict]) -> dict[str, float]:
    """castorini/nuggetizer core/metrics.py, for one response: strict counts support only, the others add half of
    each partial_support; the vital scores read the vital nuggets only (0 when there are none)."""
    vital = [n for n in nuggets if n["importance"] == "vital"]

    def score(ns: list[dict], partial: float) -> float:
        if not ns:
            return 0.0
        return sum(
            1.0 if n["assignment"] == "support" else partial if n["assignment"] == "partial_support" else 0.0
            for n in ns
        ) / len(ns)

    return {
        "V_strict": score(vital, 0.0),
        "A_strict": score(nuggets, 0.0),
        "V": score(vital, 0.5),
        "A": score(nuggets, 0.5),
    }


def imported(kind: str, path) -> ResponseLabelSet:
    """The file through the product's importer (one turn per topic, made from the file)."""
    ok(kind, path, collection=factories.collection("TREC RAG 2024", year=2024), options={"create_turns": True})
    return ResponseLabelSet.objects.get()


@pytest.mark.parametrize("through", ["test loader", "importer"])
def test_per_run_nugget_scores_of_the_21_topic_file_equal_nuggetizers_formulas(shared_data, through):
    rows = list(helpers.read_jsonl(shared_data / helpers.NUGGETS_FILE))
    assert len(rows) == 927
    if through == "importer":
        label_set = imported("nuggets", shared_data / helpers.NUGGETS_FILE)
    else:
        label_set = helpers.load_nugget_assignments(rows)

    expected: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        for m, v in nuggetizer_scores(row["nuggets"]).items():
            expected[row["run_id"]][m].append(v)
    board = sel.leaderboard(label_set=label_set, measure="V_strict")
    assert len(board) == 45
    for r in board:
        assert r.scored == r.labelled == r.responses == len(expected[r.run]["A"])
        for m in ("V_strict", "A_strict", "V", "A"):
            assert r.values[m] == pytest.approx(sum(expected[r.run][m]) / len(expected[r.run][m]), abs=1e-12), (
                r.run,
                m,
            )
    ranked = [r.values["V_strict"] for r in board]
    assert ranked == sorted(ranked, reverse=True) and [r.rank for r in board] == list(range(1, 46))


WEIGHT = {"2": Fraction(1), "1": Fraction(1, 2), "0": Fraction(0)}


def plain_citation_support(rows: list[dict]) -> dict[str, tuple[float, float]]:
    """TREC 2024 RAG support evaluation, as a loop over the file: first citations only; precision over sentences
    whose first citation is judged, recall over all sentences but those whose first citation is unjudged; a run's
    figure is the sum over the file's topics divided by their number."""
    topics = {r["topic_id"] for r in rows}
    sums: dict[str, list[Fraction]] = defaultdict(lambda: [Fraction(0), Fraction(0)])
    for row in rows:
        firsts = [s["citations"][0]["support"] if s["citations"] else None for s in row["sentences"]]
        weight = sum((WEIGHT[f] for f in firsts if f in WEIGHT), Fraction(0))
        judged = sum(f in WEIGHT for f in firsts)
        counted = sum(f is None or f in WEIGHT for f in firsts)
        sums[row["run_id"]][0] += weight / judged if judged else 0
        sums[row["run_id"]][1] += weight / counted if counted else 0
    return {run: (float(p / len(topics)), float(r / len(topics))) for run, (p, r) in sums.items()}


@pytest.mark.parametrize("through", ["test loader", "importer"])
def test_citation_support_of_the_9_topic_file_equals_a_hand_checked_computation(shared_data, through):
    rows = list(helpers.read_jsonl(shared_data / helpers.CITATIONS_FILE))
    assert len(rows) == 381
    if through == "importer":
        label_set = imported("citation_support", shared_data / helpers.CITATIONS_FILE)
    else:
        label_set = helpers.load_citation_judgments(rows)
    board = {r.run: r for r in sel.leaderboard(label_set=label_set, measure="precision")}
    assert len(board) == 45

    # By hand, webis.webis-manual answered 2 of the 9 judged topics (the other 7 count 0):
    #   2024-32912: 16 sentences, 6 with a (judged) first citation: 1, 1, 0, 1, 1, 0 → weights 4 × 0.5 = 2.0;
    #               precision 2 / 6 = 1/3, recall 2 / 16 = 1/8
    #   2024-41849: 11 sentences, 5 cited: 0, 2, 0, 0, 2 → weights 2; precision 2 / 5, recall 2 / 11
    #   run: precision (1/3 + 2/5) / 9 = 11/135; recall (1/8 + 2/11) / 9 = (27/88) / 9 = 3/88
    webis = board["webis.webis-manual"]
    assert webis.values["precision"] == pytest.approx(11 / 135, abs=1e-12)
    assert webis.values["recall"] == pytest.approx(3 / 88, abs=1e-12)
    assert (webis.scored, webis.labelled) == (2, 9)

    for run, (precision, recall) in plain_citation_support(rows).items():
        assert board[run].values["precision"] == pytest.approx(precision, abs=1e-12), run
        assert board[run].values["recall"] == pytest.approx(recall, abs=1e-12), run


def _download(client, url: str) -> list[dict]:
    response = client.get(url)
    assert response.status_code == 200
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


def test_the_nuggetizer_exports_give_back_the_21_topic_file(shared_data, admin_client):
    rows = list(helpers.read_jsonl(shared_data / helpers.NUGGETS_FILE))
    label_set = helpers.load_nugget_assignments(rows)
    exported = _download(
        admin_client, reverse("responses-label-set-download", args=[label_set.pk, "assignments.jsonl"])
    )
    key = lambda r: (r["qid"], r["run_id"])  # noqa: E731
    assert sorted(exported, key=key) == sorted(rows, key=key)
    nuggets = _download(admin_client, reverse("responses-bank-download", args=[label_set.bank_id]))
    first = {r["qid"]: r for r in rows}
    assert sorted(nuggets, key=lambda r: r["qid"]) == [
        {
            "query": r["query"],
            "qid": qid,
            "nuggets": [{"text": n["text"], "importance": n["importance"]} for n in r["nuggets"]],
        }
        for qid, r in sorted(first.items())
    ]


def test_the_citation_export_gives_back_the_9_topic_file(shared_data, admin_client):
    rows = list(helpers.read_jsonl(shared_data / helpers.CITATIONS_FILE))
    label_set = helpers.load_citation_judgments(rows)
    exported = _download(admin_client, reverse("responses-label-set-download", args=[label_set.pk, "citations.jsonl"]))
    for row in rows:  # the file's 11 NaN sentence texts are stored without text
        for s in row["sentences"]:
            s["text"] = s["text"] if isinstance(s["text"], str) else ""
    key = lambda r: (r["topic_id"], r["run_id"])  # noqa: E731
    assert sorted(exported, key=key) == sorted(rows, key=key)

"""Agreement on real assessments: a derived version of the CAsT 2019 qrels with DECAF runs, the CAsT-snippets crowd
against the NIST grades of the same passages, and the two iKAT 2023 PTKB relevance assessments."""

from __future__ import annotations

import ast
import csv
import gzip
import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from ecast.imports.formats.qrels import read_qrels
from ecast.models import Collection
from evaluation import services
from evaluation.agreement import algorithms as al
from evaluation.agreement import selectors as asel
from evaluation.models import QrelsVersion
from evaluation.selectors import leaderboard
from tests.evaluation.helpers import cast2019_decaf, derive

RUNS = tuple(range(1, 17))  # all sixteen DECAF configurations
CROWD = "crowd/cast2020_snippets_lajewska2023"


def _cast2019(shared_data: Path) -> tuple[Collection, QrelsVersion]:
    """The CAsT 2019 collection (threshold 1) with its official qrels as "original" and all sixteen DECAF runs."""
    return cast2019_decaf(shared_data, RUNS, "CAsT 2019 (agreement)")


def _rejudged(qrels: dict[str, dict[str, int]], share: float, seed: int) -> dict[str, dict[str, int]]:
    """A second assessor who grades a seeded ``share`` of the items one step differently (0 up, 4 down)."""
    rng = random.Random(seed)
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for q in sorted(qrels):
        for d in sorted(qrels[q]):
            if rng.random() < share:
                g = qrels[q][d]
                out[q][d] = 1 if g == 0 else 3 if g == 4 else g + rng.choice((-1, 1))
    return dict(out)


@pytest.mark.django_db
def test_a_derived_version_of_the_cast_2019_qrels_against_its_original(shared_data):
    coll, original = _cast2019(shared_data)
    base = read_qrels(shared_data / "cast/2019/2019qrels.txt")
    changes = _rejudged(base, share=0.2, seed=2019)
    derived = derive(original, "original + new", changes)
    for version in (original, derived):
        services.scores_compute_for_version(version=version, measures=["nDCG@3"])

    report = asel.agreement_report(a=original, b=derived, measure="nDCG@3")

    judged, changed = sum(len(d) for d in base.values()), sum(len(d) for d in changes.values())
    assert judged == 29_350 and report["items"] == judged and report["only_a"] == report["only_b"] == 0
    assert report["exact"] == pytest.approx(1 - changed / judged)  # every re-judged item moved one grade
    items = al.paired_items(asel.version_items(version=original), asel.version_items(version=derived))
    ga, gb = [p.a for p in items], [p.b for p in items]
    assert report["kappa"]["value"] == pytest.approx(cohen_kappa_score(ga, gb, weights="linear"), abs=1e-12)
    assert report["kappa"]["low"] < report["kappa"]["value"] < report["kappa"]["high"]
    # One step off never crosses more than one cell from the diagonal.
    matrix = report["confusion"]
    assert all(matrix[i][j] == 0 for i in range(5) for j in range(5) if abs(i - j) > 1)
    ba, bb = [int(g >= 1) for g in ga], [int(g >= 1) for g in gb]
    assert report["binary"]["kappa"]["value"] == pytest.approx(cohen_kappa_score(ba, bb), abs=1e-12)
    assert len(report["topics"]) == 20 and sum(t["items"] for t in report["topics"]) == judged

    ranking = report["ranking"]
    means_a = {r["run"]: r["headline"] for r in leaderboard(version=original, measures=["nDCG@3"])}
    means_b = {r["run"]: r["headline"] for r in leaderboard(version=derived, measures=["nDCG@3"])}
    names = sorted(means_a)
    assert ranking["n"] == len(RUNS)
    assert ranking["tau"] == pytest.approx(
        kendalltau([means_a[n] for n in names], [means_b[n] for n in names]).statistic, abs=1e-12
    )
    for s in ranking["swapped"]:
        assert s["a_x"] > s["a_y"] and s["b_x"] < s["b_y"]
        assert (s["a_x"], s["b_x"]) == (means_a[s["x"]], means_b[s["x"]])
    print(  # the figures a reader of the test log wants
        f"\nCAsT 2019 original vs 20% re-judged: items {report['items']}, exact {report['exact']:.4f}, "
        f"κ_w {report['kappa']['value']:.4f} [{report['kappa']['low']:.4f}, {report['kappa']['high']:.4f}], "
        f"binary κ {report['binary']['kappa']['value']:.4f}, overlap {report['binary']['overlap']:.4f}, "
        f"τ {ranking['tau']:.4f} over {ranking['n']} runs, swapped {[(s['x'], s['y']) for s in ranking['swapped']]}, "
        f"{report['seconds']} s"
    )


def _crowd_rows(shared_data: Path) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for path in sorted((shared_data / CROWD).glob("*.csv.gz")):
        with gzip.open(path, "rt", encoding="utf-8", newline="") as handle:
            rows.extend(csv.DictReader(handle))
    return rows


def _found_an_answer(answer: str) -> int:
    """1 when the worker marked at least one span of the passage as answering the question."""
    data = ast.literal_eval(answer)[0]
    return int(bool(data["relevant-text-spans-single-passage-annotation"]["entities"]))


def test_the_crowd_agrees_with_nist_on_which_cast_2020_passages_hold_an_answer(shared_data):
    # The crowd marked answer spans; an item's crowd label is the majority of its three workers (found an answer or
    # not), set against the NIST grade binarised at the CAsT 2020 threshold (2).
    rows = _crowd_rows(shared_data)
    votes: dict[al.Item, list[int]] = defaultdict(list)
    nist: dict[al.Item, int] = {}
    for r in rows:
        key = (r["Input.turn_id"], r["Input.passage_id"])
        votes[key].append(_found_an_answer(r["Answer.taskAnswers"]))
        nist[key] = int(r["Input.relevance_score"])
    assert len(votes) == 1_040 and {len(v) for v in votes.values()} == {3}
    crowd = {k: int(sum(v) >= 2) for k, v in votes.items()}
    nist_relevant = {k: al.binarise(g, 2) for k, g in nist.items()}

    report = al.agreement(nist_relevant, crowd, threshold=2)

    keys = sorted(crowd)
    assert report["items"] == 1_040 and not report["graded"]
    assert report["kappa"]["value"] == pytest.approx(
        cohen_kappa_score([nist_relevant[k] for k in keys], [crowd[k] for k in keys]), abs=1e-12
    )
    assert len(report["topics"]) == 25
    # The asymptotic interval is as wide as a seeded bootstrap over the items says.
    rng = np.random.default_rng(2020)
    xa, xb = np.array([nist_relevant[k] for k in keys]), np.array([crowd[k] for k in keys])
    boot = []
    for _ in range(400):
        pick = rng.integers(0, len(keys), len(keys))
        boot.append(cohen_kappa_score(xa[pick], xb[pick]))
    assert report["kappa"]["se"] == pytest.approx(float(np.std(boot, ddof=1)), rel=0.15)
    assert report["binary"]["relevant_a"] == sum(nist_relevant.values())
    # The crowd's majority finds an answer in most passages NIST graded 2 or more.
    assert report["binary"]["relevant_both"] / report["binary"]["relevant_a"] > 0.8
    # And the graded view: the share of workers who found an answer rises with the NIST grade.
    by_grade: dict[int, list[int]] = defaultdict(list)
    for k, v in votes.items():
        by_grade[nist[k]].extend(v)
    share = {g: sum(v) / len(v) for g, v in sorted(by_grade.items())}
    assert share[4] > share[1]
    print(
        f"\nCAsT-snippets crowd vs NIST (grade >= 2): items {report['items']}, exact {report['exact']:.4f}, "
        f"κ {report['kappa']['value']:.4f} [{report['kappa']['low']:.4f}, {report['kappa']['high']:.4f}], "
        f"overlap {report['binary']['overlap']:.4f}, confusion {report['confusion']}, "
        f"found-an-answer share by grade { ({g: round(s, 3) for g, s in share.items()}) }"
    )


def test_nist_and_the_organisers_on_ikat_2023_ptkb_statement_relevance(shared_data):
    nist = read_qrels(shared_data / "ikat/2023/ptkb_rel_nist")
    org = read_qrels(shared_data / "ikat/2023/ptkb_rel_org")
    a = {(q, s): g for q, st in nist.items() for s, g in st.items()}
    b = {(q, s): g for q, st in org.items() for s, g in st.items()}

    report = al.agreement(a, b, threshold=1)

    keys = sorted(set(a) & set(b))
    assert report["items"] == len(keys) > 300 and not report["graded"]
    assert report["kappa"]["value"] == pytest.approx(
        cohen_kappa_score([a[k] for k in keys], [b[k] for k in keys]), abs=1e-12
    )
    assert all("-" in t["topic"] for t in report["topics"])  # iKAT topics are <topic>-<persona>
    print(
        f"\niKAT 2023 PTKB NIST vs organisers: items {report['items']} (only NIST {report['only_a']}, only org "
        f"{report['only_b']}), exact {report['exact']:.4f}, κ {report['kappa']['value']:.4f} "
        f"[{report['kappa']['low']:.4f}, {report['kappa']['high']:.4f}], overlap {report['binary']['overlap']:.4f}, "
        f"undefined topics {sum(t['kappa'] is None for t in report['topics'])}/{len(report['topics'])}"
    )

"""evaluation.metrics against trec_eval: the DECAF CAsT 2019 summaries and pytrec_eval per-query values."""

from __future__ import annotations

import random

import ir_measures
import pytest
import pytrec_eval

from ecast.imports.formats.qrels import read_qrels
from ecast.imports.formats.runs import read_run
from evaluation import metrics

DECAF = "runs/cast2019_decaf"
MEASURES = [
    "nDCG@1",
    "nDCG@3",
    "nDCG@5",
    "nDCG@10",
    "nDCG",
    "AP",
    "R@100",
    "Bpref",
    "infAP",
    "P@1",
    "P@3",
    "P@5",
    "P@10",
    "Rprec",
    "RR",
]


@pytest.fixture(scope="module")
def qrels_2019(shared_data):
    return read_qrels(shared_data / "cast/2019/2019qrels.txt")


def _summary(path) -> dict[str, float]:
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "all" and parts[0] != "runid":
            out[parts[0]] = float(parts[2])
    return out


def test_it_reproduces_the_trec_eval_summaries_of_all_16_decaf_runs(shared_data, qrels_2019):
    evaluator = metrics.make_evaluator(qrels_2019, MEASURES, rel_threshold=1)
    checked = 0
    for n in range(1, 17):
        run = read_run(shared_data / DECAF / f"exp{n}.run.gz")
        summary = _summary(shared_data / DECAF / f"exp{n}.trec_eval.txt")
        per_turn = evaluator(run)
        assert len(per_turn["AP"]) == int(summary["num_q"]) == 173
        for measure in MEASURES:
            name = metrics.trec_eval_name(measure)
            assert name in summary, (measure, name)
            assert metrics.mean(per_turn[measure]) == pytest.approx(summary[name], abs=1e-4), (n, measure)
            checked += 1
    assert checked == 16 * len(MEASURES)


def test_its_per_turn_values_equal_pytrec_eval_per_query_outputs(shared_data, qrels_2019):
    names = {m: metrics.trec_eval_name(m) for m in MEASURES}
    reference = pytrec_eval.RelevanceEvaluator(qrels_2019, set(names.values()), relevance_level=1)
    for n in (1, 9, 16):
        run = read_run(shared_data / DECAF / f"exp{n}.run.gz")
        ours = metrics.evaluate(qrels_2019, run, MEASURES)
        theirs = reference.evaluate(run)
        for measure, te in names.items():
            for qid, values in theirs.items():
                assert ours[measure][qid] == pytest.approx(values[te], abs=1e-9), (n, measure, qid)


def test_it_scores_judged_turns_missing_from_the_run_as_zero():
    qrels = {"1_1": {"a": 2, "b": 0}, "1_2": {"c": 1}}
    run = {"1_1": {"a": 3.0, "b": 1.0}, "9_9": {"z": 1.0}}
    out = metrics.evaluate(qrels, run, ["nDCG@3", "AP", "Judged@3"])
    assert out["nDCG@3"] == {"1_1": 1.0, "1_2": 0.0}
    assert out["AP"] == {"1_1": 1.0, "1_2": 0.0}
    assert "9_9" not in out["AP"]
    assert metrics.mean(out["nDCG@3"]) == 0.5


def test_it_breaks_score_ties_by_docid_descending_like_trec_eval():
    qrels = {"q": {"a": 1}}
    # Equal scores: trec_eval ranks "b" (larger docid) above "a", so the relevant doc sits at rank 2.
    out = metrics.evaluate(qrels, {"q": {"a": 1.0, "b": 1.0}}, ["RR", "P@1"])
    assert out["RR"]["q"] == 0.5
    assert out["P@1"]["q"] == 0.0


def test_it_applies_the_relevance_threshold_to_binary_measures_only():
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": {"a": 2.0, "b": 1.0}}
    lvl1 = metrics.evaluate(qrels, run, ["P@1", "AP", "nDCG@2"], rel_threshold=1)
    lvl2 = metrics.evaluate(qrels, run, ["P@1", "AP", "nDCG@2"], rel_threshold=2)
    assert lvl1["P@1"]["q"] == 1.0 and lvl2["P@1"]["q"] == 0.0
    assert lvl2["AP"]["q"] == 0.5
    # nDCG uses raw grades (gain = grade) whatever the threshold: DCG = 1/log2(2) + 2/log2(3), ideal = 2 + 1/log2(3)
    expected = (1 + 2 / 1.5849625007211562) / (2 + 1 / 1.5849625007211562)
    assert lvl1["nDCG@2"]["q"] == pytest.approx(expected) == lvl2["nDCG@2"]["q"]


def test_an_explicit_rel_in_the_measure_string_wins_over_the_threshold():
    qrels = {"q": {"a": 1}}
    out = metrics.evaluate(qrels, {"q": {"a": 1.0}}, ["P(rel=2)@1", "P@1"], rel_threshold=1)
    assert out["P(rel=2)@1"]["q"] == 0.0 and out["P@1"]["q"] == 1.0


def test_it_accepts_trec_eval_spellings_and_rejects_unknown_measures():
    assert metrics.canonical_name("bpref") == "Bpref"
    assert metrics.trec_eval_name("nDCG@3") == "ndcg_cut_3"
    assert metrics.trec_eval_name("R@1000") == "recall_1000"
    with pytest.raises(metrics.MeasureError, match="nonsense"):
        metrics.evaluate({"q": {"a": 1}}, {}, ["nonsense@3"])


def test_the_judged_measure_counts_judged_documents_in_the_top_k():
    qrels = {"q": {"a": 0, "b": 1}}
    out = metrics.evaluate(qrels, {"q": {"a": 3.0, "x": 2.0, "b": 1.0}}, ["Judged@3", "Judged@1"])
    assert out["Judged@3"]["q"] == pytest.approx(2 / 3)
    assert out["Judged@1"]["q"] == 1.0


def test_judged_at_k_equals_ir_measures_on_tie_heavy_runs():
    rng = random.Random(5)
    qrels = {f"q{i}": {f"d{j}": rng.randint(0, 2) for j in range(0, 60, 3)} for i in range(30)}
    run = {f"q{i}": {f"d{j}": float(rng.randint(0, 5)) for j in range(60)} for i in range(30)}
    ours = metrics.evaluate(qrels, run, ["Judged@3", "Judged@10"])
    wanted = [ir_measures.parse_measure("Judged@3"), ir_measures.parse_measure("Judged@10")]
    for m in ir_measures.iter_calc(wanted, qrels, run):
        assert ours[str(m.measure)][m.query_id] == pytest.approx(m.value)


# Every measure the product stores or offers for analyses, plus parameterised spellings the mapping must honour.
OFFERED = [
    *metrics.DEFAULT_MEASURES,
    "nDCG",
    "nDCG@1",
    "nDCG@20",
    "AP@10",
    "AP(rel=2)",
    "P(rel=2)@5",
    "R@10",
    "RR(rel=3)",
    "Success@1",
    "Success@5",
    "Judged@1",
    "Judged@5",
    "Judged",
]


@pytest.mark.parametrize("threshold", [1, 2])
def test_direct_pytrec_eval_values_equal_ir_measures_for_every_offered_measure(shared_data, qrels_2019, threshold):
    runs = sorted((shared_data / DECAF).glob("*.run.gz"))[:3]
    assert len(runs) == 3
    parsed = {m: metrics.parse_measure(m, rel_threshold=threshold) for m in OFFERED}
    evaluator = metrics.make_evaluator(qrels_2019, OFFERED, rel_threshold=threshold)
    for path in runs:
        run = read_run(path)
        ours = evaluator(run)
        wanted = {q: dict.fromkeys(OFFERED, 0.0) for q in qrels_2019}
        for name, m in parsed.items():
            for metric in ir_measures.iter_calc([m], qrels_2019, run):
                wanted[metric.query_id][name] = metric.value
        for name in OFFERED:
            for q in qrels_2019:
                assert ours[name][q] == pytest.approx(wanted[q][name], abs=1e-9), (path.name, name, q)


def test_judged_at_k_from_a_stored_top_slice_equals_ir_measures_with_ties():
    rng = random.Random(9)
    qrels = {f"q{i}": {f"d{j}": rng.randint(0, 2) for j in range(0, 40, 2)} for i in range(40)}
    tops, run = {}, {}
    for i in range(40):
        scores = sorted((float(rng.randint(0, 6)) for _ in range(40)), reverse=True)
        ids = [f"d{j}" for j in rng.sample(range(40), 40)]
        run[f"q{i}"] = dict(zip(ids, scores, strict=True))
        tops[f"q{i}"] = metrics.top_slice(ids, scores, 10)
    ev = metrics.RankingEvaluator(qrels, ["Judged@3", "Judged@10"])
    ours = ev.values(run, tops)
    wanted = [ir_measures.parse_measure("Judged@3"), ir_measures.parse_measure("Judged@10")]
    for m in ir_measures.iter_calc(wanted, qrels, run):
        assert ours[m.query_id][ev.measures.index(str(m.measure))] == pytest.approx(m.value, abs=1e-12)


def test_a_top_slice_refuses_rankings_not_in_descending_score_order():
    assert metrics.top_slice(["a", "b", "c"], [1.0, 2.0, 0.5], 2) is None
    assert metrics.top_slice(["a", "b", "c"], [2.0, 1.0, 1.0], 2) == ["a", "b"]
    assert metrics.top_slice(["a", "c", "b"], [2.0, 1.0, 1.0], 2) == ["a", "b"]


def test_rankings_decoded_together_are_each_checked_for_descending_scores_on_their_own():
    # Scores are checked many rankings at a time: a ranking's order is its own (the step from one ranking's last
    # score to the next one's first never counts), and short, scoreless, tied or unordered ones keep their paths.
    from evaluation.models.core import DocIdsField, ScoresField
    from evaluation.selectors import rankings_iter

    stored = [
        (["a", "b", "c"], [3.0, 2.0, 1.0]),  # strictly descending: shared rank scores, the stored head is the top
        (["d"], [5.0]),  # one document, scoring above the ranking before's last
        (["e", "f"], [1.0, 1.0]),  # a tie: its own scores, the top in Judged order
        (["g", "h"], []),  # no scores: rank scores
        (["k", "l", "m"], [1.0, 2.0, 0.5]),  # out of order: its own scores, no top from the stored order
        ([], []),  # nothing ranked
    ]
    rows = [(1, i, DocIdsField.pack(ids), ScoresField.pack(scores)) for i, (ids, scores) in enumerate(stored)]
    decoded = [(tpk, ranking.docs, ranking.top) for _, tpk, ranking in rankings_iter(rows, judged_depth=2)]
    assert decoded == [
        (0, {"a": 3.0, "b": 2.0, "c": 1.0}, ["a", "b"]),
        (1, {"d": 1.0}, ["d"]),
        (2, {"e": 1.0, "f": 1.0}, ["e", "f"]),
        (3, {"g": 2.0, "h": 1.0}, None),
        (4, {"k": 1.0, "l": 2.0, "m": 0.5}, None),
        (5, {}, []),
    ]


@pytest.mark.parametrize("threshold", [1, 2])
def test_stored_rankings_decoded_for_a_recompute_score_exactly_as_their_own_scores(shared_data, qrels_2019, threshold):
    # Strictly descending rankings are evaluated with shared rank scores instead of their own (trec_eval reads
    # scores only to order a ranking); ties, duplicates and out-of-order rankings keep their own.
    from evaluation.models.core import DocIdsField, ScoresField
    from evaluation.selectors import rankings_iter

    run = read_run(sorted((shared_data / DECAF).glob("*.run.gz"))[0])
    rng = random.Random(3)
    qids = sorted(run)
    odd = {q: dict(run[q]) for q in qids[:4]}
    first = max(odd[qids[0]], key=odd[qids[0]].get)
    odd[qids[0]][first + "-twin"] = odd[qids[0]][first]  # a tie at the top
    for q in qids[1:3]:
        for d in odd[q]:
            odd[q][d] = float(rng.randint(0, 3))  # tie-heavy
    rows, wanted = [], {**run, **odd}
    for i, q in enumerate(sorted(wanted)):
        ranked = sorted(wanted[q].items(), key=lambda ds: (-ds[1], ds[0]))
        if q == qids[3]:
            ranked.reverse()  # stored out of score order
        ids, scores = [d for d, _ in ranked], [s for _, s in ranked]
        if q == qids[4]:
            ids.append(ids[0])  # a duplicated doc further down: its first occurrence counts
            scores.append(min(scores) - 1.0)
        rows.append((1, i, DocIdsField.pack(ids), ScoresField.pack(scores)))
    ev = metrics.RankingEvaluator(qrels_2019, OFFERED, rel_threshold=threshold)
    decoded = {sorted(wanted)[tpk]: ranking for _, tpk, ranking in rankings_iter(rows, judged_depth=ev.judged_depth)}
    ours = ev.values({q: r.docs for q, r in decoded.items()}, {q: r.top for q, r in decoded.items() if r.top})
    expected = ev.values(wanted)
    assert ours == expected

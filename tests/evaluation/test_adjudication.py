"""Judging orders on tiny pools against hand-worked sequences, and their properties on random pools."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation import adjudication as st

REPO = Path(__file__).resolve().parents[2]

# Two runs sharing one document; x and v relevant.
SHARED = {"A": ["x", "y", "z"], "B": ["w", "x", "v"]}


def test_depth_first_orders_by_best_rank_then_document_id_whatever_the_judgments():
    # best ranks (0-based): w 0 (B), x 0 (A; 1 in B), y 1, v 2, z 2 → (0,w) (0,x) (1,y) (2,v) (2,z)
    assert st.judging_order("depth_first", SHARED, {"x", "v"}) == ["w", "x", "y", "v", "z"]
    assert st.judging_order("depth_first", SHARED, set()) == ["w", "x", "y", "v", "z"]


def test_move_to_front_stays_on_a_run_until_it_misses_then_passes_to_the_highest_priority():
    runs = {"A": ["d1", "d2", "d3"], "B": ["d4", "d1", "d5"], "C": ["d6", "d7"]}
    # priorities start A0 B0 C0, A starts
    # 1 A: d1 relevant → stay          2 A: d2 relevant → stay
    # 3 A: d3 not → A=-1; max 0 among B, C, cyclic after A → B
    # 4 B: d4 not → B=-1; max 0: C     5 C: d6 not → C=-1; all -1, cyclic after C: A (no docs left) → B
    # 6 B: d1 already judged, skipped; d5 relevant → stay; B is then empty → C
    # 7 C: d7 relevant
    assert st.judging_order("mtf", runs, {"d1", "d2", "d5", "d7"}) == ["d1", "d2", "d3", "d4", "d6", "d5", "d7"]


UNEVEN = {"A": ["a1", "a2", "a3"], "B": ["b1", "b2", "b3"], "C": ["c1", "c2"]}
UNEVEN_REL = {"a1", "b1", "b2", "b3"}


def test_move_to_front_lets_the_run_that_missed_come_last_among_equal_priorities():
    # 1 A: a1 rel   2 A: a2 not → A=-1 → B (0)   3-5 B: b1 b2 b3 rel, B empty → after B: C (0) beats A (-1)
    # 6 C: c1 not → C=-1; A -1, C -1, cyclic after C → A   7 A: a3 not → A=-2 → C   8 C: c2
    assert st.judging_order("mtf", UNEVEN, UNEVEN_REL) == ["a1", "a2", "b1", "b2", "b3", "c1", "a3", "c2"]


def test_maxmean_without_discount_plays_the_arm_of_highest_posterior_mean():
    # γ = 1 (stationary MM): mean = (1 + rel) / (2 + rel + nrel)
    # 1 all 1/2, first by name → A: a1 rel → A 2/3
    # 2 A 2/3: a2 not → A 2/4 = 1/2; now A, B, C all 1/2 → A by name
    # 3 A: a3 not → A 2/5 = 0.4 → B 1/2: b1 rel 2/3, b2 rel 3/4, b3 rel 4/5, B empty
    # 4 C 1/2: c1 not → 1/3, c2
    order = st.judging_order("mm_ns", UNEVEN, UNEVEN_REL, gamma=1.0)
    assert order == ["a1", "a2", "a3", "b1", "b2", "b3", "c1", "c2"]
    assert st.judging_order("mm", UNEVEN, UNEVEN_REL) == order


def test_maxmean_non_stationary_discounts_older_evidence():
    # γ = 1/2: rel = Σ γ^(n−k) r_k
    # 1 A: a1 rel → rel 1, nrel 0 → 2/3
    # 2 A: a2 not → rel 0.5, nrel 1 → 1.5/3.5 = 0.429 < B 1/2 (undiscounted MM stayed on A here)
    # 3 B: b1 rel 2/3 → b2 rel: rel 1.5 → 2.5/3.5 = 0.714 → b3 rel: rel 1.75 → 0.733; B empty
    # 4 C 0.5 > A 0.429: c1 not → C 1/3 → A 0.429: a3 not → A empty → C: c2
    order = st.judging_order("mm_ns", UNEVEN, UNEVEN_REL, gamma=0.5)
    assert order == ["a1", "a2", "b1", "b2", "b3", "c1", "a3", "c2"]


def test_maxmean_credits_every_run_that_retrieved_the_judged_document():
    # γ = 1/2. 1 A (tie, by name): x rel → A and B (B also has x) both 2/3
    # 2 tie → A: y not → A: rel .5 nrel 1 → 0.429; B 2/3 → B: w (x judged) not → B 0.429
    # 3 tie → A: z not; B: v rel
    assert st.judging_order("mm_ns", SHARED, {"x", "v"}, gamma=0.5) == ["x", "y", "w", "z", "v"]


def test_a_prior_seeds_the_bandit_arms_and_leaves_the_other_orders_alone():
    # Earlier judgments: run B's two documents above the pool were relevant, A's one was not (γ = 1/2).
    # A: rel 0, nrel 1 → 1/3; B: rel 1.5 (0.5·1 + 1), nrel 0 → 2.5/3.5 = 0.714 → B plays first: b1 rel, b2 rel, b3 rel
    # then C 1/2 > A 1/3: c1 not → C 1/3; A 1/3 = C 1/3 → A (by name): a1 rel → A rel 1, nrel 0.5 → 2/3.5 = 0.571
    # a2 not → A rel 0.5, nrel 1.25 → 1.5/3.75 = 0.4 > C 1/3: a3 not → A empty → C: c2
    prior = {"A": [False], "B": [True, True]}
    order = st.judging_order("mm_ns", UNEVEN, UNEVEN_REL, gamma=0.5, prior=prior)
    assert order == ["b1", "b2", "b3", "c1", "a1", "a2", "a3", "c2"]
    assert st.next_document("mm_ns", UNEVEN, {}, gamma=0.5, prior=prior) == "b1"
    for name in ("depth_first", "mtf"):
        assert st.judging_order(name, UNEVEN, UNEVEN_REL, prior=prior) == st.judging_order(name, UNEVEN, UNEVEN_REL)


def test_next_document_replays_the_judgments_so_far():
    order = st.judging_order("mtf", UNEVEN, UNEVEN_REL)
    for k in range(len(order)):
        judged = {d: d in UNEVEN_REL for d in order[:k]}
        assert st.next_document("mtf", UNEVEN, judged) == order[k]
    assert st.next_document("mtf", UNEVEN, {d: d in UNEVEN_REL for d in order}) is None


def test_planned_order_starts_with_the_next_document_and_assumes_the_rest_non_relevant():
    judged = {"a1": True}
    plan = st.planned_order("mtf", UNEVEN, judged)
    assert plan[0] == st.next_document("mtf", UNEVEN, judged) == "a2"
    # a2 not → B: b1 not → C: c1 not → cyclic after C: A a3 … every run −1 then −2: A a3, B b2, C c2, B b3
    assert plan == ["a2", "b1", "c1", "a3", "b2", "c2", "b3"]


def test_unknown_strategy_and_bad_discount_are_rejected():
    with pytest.raises(ValueError, match="unknown judging strategy"):
        st.make_strategy("random", SHARED)
    with pytest.raises(ValueError, match="gamma"):
        st.make_strategy("mm_ns", SHARED, gamma=0.0)


def _random_pool(rng: random.Random) -> tuple[dict[str, list[str]], set[str]]:
    docs = [f"d{i}" for i in range(rng.randint(1, 25))]
    runs = {f"r{j}": rng.sample(docs, rng.randint(1, len(docs))) for j in range(rng.randint(1, 6))}
    pooled = sorted({d for ranking in runs.values() for d in ranking})
    return runs, {d for d in pooled if rng.random() < 0.3}


@pytest.mark.parametrize("name", list(st.STRATEGIES))
def test_every_pooled_document_is_chosen_exactly_once(name):
    rng = random.Random(15)
    for _ in range(200):
        runs, rel = _random_pool(rng)
        order = st.judging_order(name, runs, rel)
        assert sorted(order) == sorted({d for ranking in runs.values() for d in ranking})


@pytest.mark.parametrize("name", list(st.STRATEGIES))
def test_the_next_document_depends_only_on_the_judgments_not_their_order(name):
    rng = random.Random(7)
    for _ in range(100):
        runs, rel = _random_pool(rng)
        order = st.judging_order(name, runs, rel)
        k = rng.randint(0, len(order))
        items = [(d, d in rel) for d in order[:k]]
        shuffled = items[:]
        rng.shuffle(shuffled)
        expected = order[k] if k < len(order) else None
        assert st.next_document(name, runs, dict(items)) == expected
        assert st.next_document(name, runs, dict(shuffled)) == expected
        # Runs given in another order are the same runs: ties go by run name, not by insertion order.
        reversed_runs = dict(reversed(list(runs.items())))
        assert st.next_document(name, reversed_runs, dict(shuffled)) == expected


@pytest.mark.parametrize("name", list(st.STRATEGIES))
def test_judgments_made_out_of_order_are_never_handed_out_again(name):
    rng = random.Random(3)
    for _ in range(100):
        runs, rel = _random_pool(rng)
        pooled = sorted({d for ranking in runs.values() for d in ranking})
        judged = {d: d in rel for d in rng.sample(pooled, rng.randint(0, len(pooled)))}
        nxt = st.next_document(name, runs, judged)
        assert (nxt is None) == (len(judged) == len(pooled))
        assert nxt not in judged
        plan = st.planned_order(name, runs, judged)
        assert sorted(plan) == sorted(set(pooled) - set(judged))


def test_importing_the_strategies_loads_neither_django_nor_celery():
    probe = (
        "import json, sys; import evaluation.adjudication; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'celery'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


@pytest.mark.parametrize("name", ["mtf", "mm_ns", "mm"])
def test_ties_between_runs_follow_their_names_in_natural_order(name):
    # Ten runs, nothing relevant: every strategy starts with the first run in name order, exp2 before exp10.
    runs = {f"exp{i}": [f"d{i}"] for i in (10, 9, 2, 1)}
    assert st.judging_order(name, runs, set()) == ["d1", "d2", "d9", "d10"]


def test_another_run_order_may_be_given_and_must_name_every_run_once():
    runs = {"exp1": ["a"], "exp2": ["b"]}
    assert st.judging_order("mtf", runs, set(), order=["exp2", "exp1"]) == ["b", "a"]
    with pytest.raises(ValueError, match="each of the runs once"):
        st.judging_order("mtf", runs, set(), order=["exp2"])

"""Counting, enumerating and sampling dependency-aware orders on hand-built conversations."""

import itertools
from collections import Counter
from pathlib import Path

import pytest

from evaluation.permutations import orders as P


def brute_force(labels):
    """All orders of the turns that satisfy the rules, checked one by one (no use of the closed form)."""
    s = P.structure_from_labels(labels)
    numbers = [n for n, _ in labels]
    return [o for o in itertools.permutations(numbers) if P.is_valid(s, o)]


HAND_BUILT = [
    # turn 1, one SE block with two PTs, one FT: units {3:(3,4,5)}, {2}; 2! * 2! = 4
    [(1, "SE"), (2, "FT"), (3, "SE"), (4, "PT"), (5, "PT")],
    # PTs before any SE belong to turn 1 and follow it at once: units {4}, {5,6}; 2! * 2! (turn 1's PTs)
    [(1, "SE"), (2, "PT"), (3, "PT"), (4, "FT"), (5, "SE"), (6, "PT")],
    # only FTs: (n-1)! orders
    [(1, "SE"), (2, "FT"), (3, "FT"), (4, "FT"), (5, "FT")],
    # SE blocks of sizes 3 and 2 plus an FT: 3! * 2! * 1! = 12
    [(1, "SE"), (2, "SE"), (3, "PT"), (4, "PT"), (5, "FT"), (6, "SE"), (7, "PT")],
    # single turn
    [(1, "SE")],
]


@pytest.mark.parametrize("labels", HAND_BUILT)
def test_the_closed_form_equals_brute_force_enumeration(labels):
    s = P.structure_from_labels(labels)
    valid = brute_force(labels)
    assert P.count_orders(s) == len(valid)
    assert sorted(P.enumerate_orders(s)) == sorted(valid)


def test_hand_worked_counts():
    counts = [P.count_orders(P.structure_from_labels(labels)) for labels in HAND_BUILT]
    assert counts == [4, 4, 24, 12, 1]


def test_turn_one_is_fixed_and_pts_follow_their_se_immediately():
    labels = HAND_BUILT[3]
    for order in P.enumerate_orders(P.structure_from_labels(labels)):
        assert order[0] == 1
        i = order.index(2)
        assert set(order[i + 1 : i + 3]) == {3, 4}
        assert order[order.index(6) + 1] == 7


def test_an_ft_between_an_se_and_its_pt_makes_the_original_invalid_but_it_is_still_included():
    labels = [(1, "SE"), (2, "SE"), (3, "FT"), (4, "PT")]
    s = P.structure_from_labels(labels)
    assert not P.original_is_valid(s)
    assert P.count_orders(s) == 2  # (1,2,4,3) and (1,3,2,4)
    assert P.distinct_order_count(s) == 3
    orders = P.sample_orders(s, k=10, seed=1)
    assert orders[0] == (1, 2, 3, 4)
    assert sorted(orders[1:]) == [(1, 2, 4, 3), (1, 3, 2, 4)]


def test_dependency_map_links_pt_to_the_nearest_preceding_se_and_ft_to_turn_one():
    labels = [(1, "SE"), (2, "PT"), (3, "SE"), (4, "FT"), (5, "PT")]
    assert P.dependency_map(labels) == {1: None, 2: 1, 3: None, 4: 1, 5: 3}


def test_sampling_is_reproducible_distinct_and_starts_with_the_original():
    labels = [(1, "SE")] + [(n, "FT") for n in range(2, 10)]  # 8! = 40320 > ENUMERATE_LIMIT → rejection-free draws
    s = P.structure_from_labels(labels)
    a = P.sample_orders(s, k=100, seed=7)
    b = P.sample_orders(s, k=100, seed=7)
    c = P.sample_orders(s, k=100, seed=8)
    assert a == b and a != c
    assert len(a) == 101 and len(set(a)) == 101
    assert a[0] == s.original
    assert all(P.is_valid(s, o) for o in a)


def test_when_k_exceeds_the_count_every_valid_order_is_returned():
    s = P.structure_from_labels(HAND_BUILT[3])
    orders = P.sample_orders(s, k=100, seed=3)
    assert len(orders) == 12 and set(orders) == set(P.enumerate_orders(s))


def test_random_orders_are_uniform_over_valid_orders():
    import random

    s = P.structure_from_labels(HAND_BUILT[3])  # 12 orders
    rng = random.Random(0)
    counts = Counter(P.random_order(s, rng) for _ in range(24_000))
    assert set(counts) == set(P.enumerate_orders(s))
    from scipy.stats import chisquare

    assert chisquare(list(counts.values())).pvalue > 1e-4


def test_it_rejects_a_turn_without_a_class():
    with pytest.raises(ValueError, match="turn 3"):
        P.structure_from_labels([(1, "SE"), (2, "FT"), (3, "")])


def test_mele_labels_reproduce_table_1_where_the_label_files_agree(shared_data: Path):
    """Conversations 31, 56, 58 and 59 of Faggioli Table 1 (72, 720, 720, 121) come out exactly."""
    convs: dict[str, list] = {}
    for line in (shared_data / "utterance_labels" / "mele2021_test_set.tsv").read_text().splitlines():
        qid, _, cls = line.split("\t")
        topic, n = qid.split("_")
        convs.setdefault(topic, []).append((int(n), cls))
    got = {t: P.distinct_order_count(P.structure_from_labels(sorted(convs[t]))) for t in ("31", "56", "58", "59")}
    assert got == {"31": 72, "56": 720, "58": 720, "59": 121}


def test_classes_from_dependencies_promote_the_referenced_turn_and_report_chains():
    # CAsT 2020 topic 81 (v1.1 annotations): 6 depends on 1 and on 5's response; 8 and 9 depend on 6.
    numbers = list(range(1, 10))
    deps = {2: [1], 3: [1], 4: [1], 5: [1], 6: [1, 5], 7: [1], 8: [6], 9: [6]}
    labels, unguaranteed = P.classes_from_dependencies(numbers, deps)
    assert "".join(labels[n] for n in numbers) == "SEFTFTFTSEPTFTPTPT"
    # 5 heads the block of 6, 8 and 9; 8 and 9 stay after 5 but may precede 6: a chain the rules cannot express.
    assert unguaranteed == [(8, 6), (9, 6)]
    s = P.structure_from_labels([(n, labels[n]) for n in numbers])
    for order in P.sample_orders(s, k=50, seed=0)[1:]:
        assert order.index(5) < order.index(6)


def test_the_enumeration_order_and_a_seeded_sample_stay_what_earlier_releases_gave():
    # A seed reproduces an experiment's orders across releases only if the enumeration it samples from keeps its
    # sequence: these values were produced by the first release of the sampler.
    s = P.structure_from_labels(
        [(1, "SE"), (2, "PT"), (3, "PT"), (4, "SE"), (5, "PT"), (6, "FT"), (7, "SE"), (8, "PT")]
    )
    assert list(P.enumerate_orders(s))[:8] == [
        (1, 2, 3, 4, 5, 6, 7, 8),
        (1, 3, 2, 4, 5, 6, 7, 8),
        (1, 2, 3, 4, 5, 7, 8, 6),
        (1, 3, 2, 4, 5, 7, 8, 6),
        (1, 2, 3, 6, 4, 5, 7, 8),
        (1, 3, 2, 6, 4, 5, 7, 8),
        (1, 2, 3, 6, 7, 8, 4, 5),
        (1, 3, 2, 6, 7, 8, 4, 5),
    ]
    assert P.sample_orders(s, 4, seed=7) == [
        (1, 2, 3, 4, 5, 6, 7, 8),
        (1, 2, 3, 6, 7, 8, 4, 5),
        (1, 3, 2, 4, 5, 7, 8, 6),
        (1, 3, 2, 6, 7, 8, 4, 5),
        (1, 3, 2, 4, 5, 6, 7, 8),
    ]


def test_sampled_orders_are_those_a_sample_of_the_whole_enumeration_gives():
    # The sampler builds only the orders it picks; the reference enumerates every order and samples that list, as
    # the first release did. Same seed, same orders in the same sequence, for every branch (all orders, picked
    # from the enumeration with a valid or an invalid original, drawn at random above ENUMERATE_LIMIT).
    import random

    def reference(s: P.Structure, k: int, seed: int) -> list[P.Order]:
        rng = random.Random(seed)
        count = P.count_orders(s)
        if count - P.original_is_valid(s) > k and count > P.ENUMERATE_LIMIT:
            out, seen = [s.original], {s.original}  # uniform draws until k distinct others
            while len(out) < k + 1:
                order = P.random_order(s, rng)
                if order not in seen:
                    seen.add(order)
                    out.append(order)
            return out
        pool = [o for o in P.enumerate_orders(s) if o != s.original]
        chosen = pool if len(pool) <= k else rng.sample(pool, k)
        if len(pool) <= k:
            rng.shuffle(chosen)
        return [s.original, *chosen]

    r = random.Random(5)
    branches: Counter = Counter()
    for _ in range(3000):
        labels = [(i + 1, r.choice(P.CLASSES) if i else "SE") for i in range(r.randint(1, 10))]
        s = P.structure_from_labels(labels)
        k, seed = r.choice([0, 1, 2, 5, 20, 100, 500]), r.randint(0, 10**6)
        assert P.sample_orders(s, k, seed) == reference(s, k, seed), (labels, k, seed)
        count = P.count_orders(s)
        others = count - P.original_is_valid(s)
        branches["all" if others <= k else "picked" if count <= P.ENUMERATE_LIMIT else "drawn"] += 1
        if others > k and count <= P.ENUMERATE_LIMIT:
            branches["picked, original valid" if P.original_is_valid(s) else "picked, original invalid"] += 1
    assert min(branches.values()) >= 20, branches  # every branch was exercised, not only the easy one

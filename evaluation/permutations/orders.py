"""Dependency-aware utterance permutations (Faggioli et al., ECIR 2022, Sec. 3.1 and Table 1).

Rules (pinned in DESIGN.md "Permutations"): turn 1 is fixed; each PT turn belongs to the nearest preceding SE turn
(to turn 1 if there is none) and the PTs of one SE follow it immediately, in any order among themselves; SE blocks
and FT turns ("units") may appear in any order after turn 1. The number of valid orders is therefore
``(#units)! * prod(#PT in block)!`` (turn 1's own PT block included in the product).

A valid order is the image of exactly one (unit order, within-block orders) tuple, so drawing each of those
uniformly and independently draws uniformly among valid orders without rejection. The original order of a
conversation is not always valid under these rules (an FT turn may sit between an SE and one of its PTs); it is
always included in the sampled set anyway, as the paper does ("100 unique permutations ... plus the original one";
the odd counts of Table 1, e.g. 121 = 5! + 1, are valid orders plus an invalid original).

Conversation trees (TREC CAsT 2022). A tree is not one conversation but several: each root-to-leaf path is what a
user could have said, and each path is permuted as a conversation of its own, by the rules above, over the **User
turns along it** (``path_labels``). System turns are the system's side: they are never moved and never queried, and
the order of a path's User turns decides what each rewritten query sees before it. A User turn's class is relative
to its path (FT: depends on the path's first turn, the tree's root; PT: on the nearest SE before it on the path),
and since a turn has exactly one path from the root, its class is the same on every path through it. So the count
of a path is ``count_orders`` of its User turns, exactly; a tree's count is the sum over its paths, a turn shared by
two paths being permuted within each of them independently (the orders of one path never mix with another's);
two leaves whose paths hold the same User turns (alternative System answers at the end) are one path.

Plain Python: no Django imports.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from ecast.core.errors import DomainError


class OrderError(DomainError, ValueError):
    """A conversation or sample size the permutation rules cannot work with."""


SE, FT, PT = "SE", "FT", "PT"
CLASSES = (SE, FT, PT)
Order = tuple[int, ...]

# Above this many valid orders, sampling draws (unit order, block orders) tuples instead of enumerating them all.
ENUMERATE_LIMIT = 20_000


@dataclass(frozen=True)
class Structure:
    """The permutation structure of one conversation: the fixed first turn, its PTs, and the movable units."""

    first: int
    first_pts: tuple[int, ...]
    # Each unit is (head, *pts): an SE turn with its PTs, or a lone FT turn.
    units: tuple[tuple[int, ...], ...]
    original: Order

    @property
    def turns(self) -> int:
        return len(self.original)


def structure_from_labels(labels: Sequence[tuple[int, str]]) -> Structure:
    """Build the structure from (turn number, class) pairs given in the conversation's original order."""
    if not labels:
        raise OrderError("a conversation needs at least one turn")
    numbers = [n for n, _ in labels]
    if len(set(numbers)) != len(numbers):
        raise OrderError("turn numbers must be distinct")
    for n, cls in labels[1:]:
        if cls not in CLASSES:
            raise OrderError(f"turn {n} has no valid class (got {cls!r}; expected SE, FT or PT)")
    first = labels[0][0]
    first_pts: list[int] = []
    units: list[list[int]] = []
    current_block: list[int] = first_pts  # where the next PT goes: turn 1's block until an SE appears
    for n, cls in labels[1:]:
        if cls == SE:
            unit = [n]
            units.append(unit)
            current_block = unit
        elif cls == FT:
            units.append([n])
        else:
            current_block.append(n)
    return Structure(
        first=first,
        first_pts=tuple(first_pts),
        units=tuple(tuple(u) for u in units),
        original=tuple(numbers),
    )


def path_labels(labels: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    """The (number, class) pairs a conversation or one path of a tree is permuted by, in order: the User turns along
    it; the first turn's class does not matter (it is fixed) and an unset one reads as SE."""
    return [(n, c or (SE if i == 0 else "")) for i, (n, c) in enumerate(labels)]


def dependency_map(labels: Sequence[tuple[int, str]]) -> dict[int, int | None]:
    """Turn number → the turn it depends on (PT → nearest preceding SE or turn 1, FT → turn 1, else None)."""
    structure = structure_from_labels(labels)
    classes = dict(labels)
    deps: dict[int, int | None] = {structure.first: None}
    for p in structure.first_pts:
        deps[p] = structure.first
    for unit in structure.units:
        head = unit[0]
        deps[head] = structure.first if classes[head] == FT else None
        for p in unit[1:]:
            deps[p] = head
    return deps


def count_orders(structure: Structure) -> int:
    """Exact number of valid orders: (#units)! × Π (#PT in block)!."""
    total = math.factorial(len(structure.units)) * math.factorial(len(structure.first_pts))
    for unit in structure.units:
        total *= math.factorial(len(unit) - 1)
    return total


def is_valid(structure: Structure, order: Sequence[int]) -> bool:
    """Whether ``order`` respects the rules for this structure."""
    if sorted(order) != sorted(structure.original) or not order or order[0] != structure.first:
        return False
    pos = 1
    n_first = len(structure.first_pts)
    if set(order[pos : pos + n_first]) != set(structure.first_pts):
        return False
    pos += n_first
    heads = {u[0]: u for u in structure.units}
    while pos < len(order):
        unit = heads.get(order[pos])
        if unit is None:
            return False
        if set(order[pos : pos + len(unit)]) != set(unit) or order[pos] != unit[0]:
            return False
        pos += len(unit)
    return True


def original_is_valid(structure: Structure) -> bool:
    """Whether the conversation's own order satisfies the rules (it need not, see the module docstring)."""
    return is_valid(structure, structure.original)


def distinct_order_count(structure: Structure) -> int:
    """Valid orders plus the original when the original itself is not valid (the paper's Table 1 counts)."""
    return count_orders(structure) + (0 if original_is_valid(structure) else 1)


def _assemble(structure: Structure, unit_order: Sequence[int], blocks: Mapping[int, Sequence[int]]) -> Order:
    out: list[int] = [structure.first, *blocks[-1]]
    for ui in unit_order:
        unit = structure.units[ui]
        out.append(unit[0])
        out.extend(blocks[ui])
    return tuple(out)


def _order_pieces(
    structure: Structure,
) -> tuple[Order, list[Order], list[Order], list[tuple[Order, ...]]]:
    """What every order is concatenated from: turn 1, each unit's head, the orders of turn 1's block, and the
    orders of every unit's block together (``itertools.product``: the last unit's varies fastest)."""
    first: Order = (structure.first,)
    heads: list[Order] = [(u[0],) for u in structure.units]
    first_blocks = list(itertools.permutations(structure.first_pts))
    block_perms = list(itertools.product(*(itertools.permutations(u[1:]) for u in structure.units)))
    return first, heads, first_blocks, block_perms


def enumerate_orders(structure: Structure) -> Iterator[Order]:
    """Every valid order, deterministically (unit orders outermost).

    The sequence is part of what a seed reproduces (``sample_orders`` samples from it), so it never changes; each
    order is concatenated from precomputed pieces because the experiment's page waits for this enumeration."""
    first, heads, first_blocks, block_perms = _order_pieces(structure)
    for unit_order in itertools.permutations(range(len(structure.units))):
        unit_heads = [heads[i] for i in unit_order]
        for first_block in first_blocks:
            head = first + first_block
            for blocks in block_perms:
                out = head
                for i, unit_head in zip(unit_order, unit_heads, strict=True):
                    out += unit_head + blocks[i]
                yield out


def _orders_at(structure: Structure, positions: Sequence[int]) -> list[Order]:
    """The orders at these positions of ``enumerate_orders``'s sequence, without enumerating the others: a position
    is (unit order, first block's order, blocks' orders) in mixed radix, the way the loops there nest."""
    first, heads, first_blocks, block_perms = _order_pieces(structure)
    unit_orders = list(itertools.permutations(range(len(structure.units))))
    out = []
    for position in positions:
        u, rest = divmod(position, len(first_blocks) * len(block_perms))
        f, b = divmod(rest, len(block_perms))
        blocks = block_perms[b]
        order = first + first_blocks[f]
        for i in unit_orders[u]:
            order += heads[i] + blocks[i]
        out.append(order)
    return out


def random_order(structure: Structure, rng: random.Random) -> Order:
    """One valid order drawn uniformly: a random unit order and independent random orders inside each block."""
    unit_order = list(range(len(structure.units)))
    rng.shuffle(unit_order)
    blocks: dict[int, list[int]] = {-1: list(structure.first_pts)}
    rng.shuffle(blocks[-1])
    for i, unit in enumerate(structure.units):
        pts = list(unit[1:])
        rng.shuffle(pts)
        blocks[i] = pts
    return _assemble(structure, unit_order, blocks)


def sample_orders(structure: Structure, k: int, seed: int) -> list[Order]:
    """The original order followed by up to ``k`` distinct other valid orders, uniform and reproducible.

    When the structure has at most ``k`` valid orders besides the original, all of them are returned (enumerated,
    in a seeded random order). Otherwise orders are drawn without replacement: small spaces by choosing among the
    enumerated orders, large ones by uniform draws kept in a set until ``k`` distinct ones are found.
    """
    if k < 0:
        raise OrderError("k must be non-negative")
    rng = random.Random(seed)
    original = structure.original
    count = count_orders(structure)
    others_available = count - (1 if original_is_valid(structure) else 0)
    if others_available <= k:
        pool = [o for o in enumerate_orders(structure) if o != original]
        rng.shuffle(pool)
        return [original, *pool]
    if count <= ENUMERATE_LIMIT:
        # k of the enumerated orders other than the original. ``sample`` picks positions from the length alone, so
        # the orders at those positions are built directly instead of enumerating them all (the experiment's
        # creation waits for this): the same orders, in the same sequence. A valid original is the first order
        # enumerated (every unit and block in its own order), so the others are positions 1 onwards.
        skip = 1 if others_available < count else 0
        return [original, *_orders_at(structure, [i + skip for i in rng.sample(range(others_available), k)])]
    seen: set[Order] = {original}
    out: list[Order] = [original]
    while len(out) < k + 1:
        order = random_order(structure, rng)
        if order not in seen:
            seen.add(order)
            out.append(order)
    return out


def orders_for_labels(labels: Sequence[tuple[int, str]], k: int, seed: int) -> list[Order]:
    """Convenience: structure from labels, then ``sample_orders``."""
    return sample_orders(structure_from_labels(labels), k, seed)


def classes_from_dependencies(
    numbers: Sequence[int], deps: Mapping[int, Sequence[int]]
) -> tuple[dict[int, str], list[tuple[int, int]]]:
    """Derive SE/FT/PT classes from turn-dependency annotations (e.g. CAsT 2020 ``query_turn_dependence`` and
    ``result_turn_dependence``), and list the dependencies the class-based rules cannot guarantee.

    Turn 1 and turns without dependencies are SE; turns depending only on turn 1 are FT; the others are PT of the
    latest earlier turn they reference. That referenced turn must head the PT's block, so an FT there is promoted to
    SE (turn 1 precedes it in every order anyway) and SE turns between the two are demoted to PT. Chains (a PT
    referencing another PT) cannot be expressed by the rules; such pairs are returned as ``unguaranteed``
    (turn, referenced turn) so the caller can report them.
    """
    if not numbers:
        return {}, []
    first = numbers[0]
    pos = {n: i for i, n in enumerate(numbers)}

    def earlier(t: int) -> list[int]:
        return [d for d in deps.get(t, ()) if d in pos and pos[d] < pos[t]]

    labels: dict[int, str] = {first: SE}
    for t in numbers[1:]:
        refs = earlier(t)
        labels[t] = SE if not refs else FT if set(refs) == {first} else PT
    for t in numbers[1:]:
        if labels[t] != PT:
            continue
        target = max((d for d in earlier(t) if d != first), key=lambda d: pos[d])
        if labels[target] == FT:
            labels[target] = SE
        if labels[target] == PT:  # chain: attach to the block of the referenced PT
            head = next((n for n in reversed(numbers[: pos[target]]) if labels[n] == SE), first)
            target = head
        for j in numbers[pos[target] + 1 : pos[t]]:
            if labels[j] == SE and j != first:
                labels[j] = PT
    deps_final = dependency_map([(n, labels[n]) for n in numbers])
    unguaranteed = sorted(
        {(t, d) for t in numbers[1:] for d in earlier(t) if d != first and deps_final.get(t) != d},
        key=lambda pair: (pos[pair[0]], pos[pair[1]]),
    )
    return labels, unguaranteed

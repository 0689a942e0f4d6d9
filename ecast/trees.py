"""Conversation trees (TREC CAsT 2022): paths, branch-aware turn numbers and mixed-initiative System turns.

A CAsT 2022 topic is a tree of turns: every turn but the first names its ``parent``, and turns that share a
parent start alternative branches. A *path* is the chain of turns from the root to one turn; every root-to-leaf
path is one conversation as a user could have had it (the flattened file lists exactly these, 50 of them). The
history of a turn is its path, never the turns of a sibling branch that happen to come earlier in the file.

A linear conversation (CAsT 2019–2021, iKAT) is the special case where each turn's parent is the turn before it:
callers that give no parents get that, so one function serves both.

Plain Python: no Django imports.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ecast.core.errors import DomainError


class TreeError(DomainError, ValueError):
    """A conversation tree that is not a tree (its parents form a cycle)."""


USER, SYSTEM = "User", "System"
CLARIFICATION, SUGGESTION = "clarification", "suggestion"

K = TypeVar("K", bound=Hashable)

# "1-3": branch 1, third turn of the conversation along that branch (User and System turns alternate).
BRANCH_NUMBER = re.compile(r"^(\d+)-(\d+)$")


def path_to(parents: Mapping[K, K | None], node: K) -> list[K]:
    """The nodes from the root down to ``node`` (both included), following ``parents``; a cycle is an error."""
    path = [node]
    seen = {node}
    parent = parents[node]
    while parent is not None:
        if parent in seen:
            raise TreeError(f"the parents of {node!r} form a cycle through {parent!r}")
        path.append(parent)
        seen.add(parent)
        parent = parents[parent]
    path.reverse()
    return path


def linear_parents(nodes: Sequence[K]) -> dict[K, K | None]:
    """The parents of a linear conversation: each turn follows the one before it."""
    return {node: (nodes[i - 1] if i else None) for i, node in enumerate(nodes)}


def leaves(parents: Mapping[K, K | None]) -> list[K]:
    """Nodes that no other node follows, in the mapping's order: the ends of the root-to-leaf paths."""
    inner = {p for p in parents.values() if p is not None}
    return [n for n in parents if n not in inner]


def root_to_leaf_paths(parents: Mapping[K, K | None]) -> list[list[K]]:
    """Every root-to-leaf path, in the order of their leaves: the conversations a tree holds."""
    return [path_to(parents, leaf) for leaf in leaves(parents)]


@dataclass
class Stretch(Generic[K]):
    """A run of turns each followed by exactly one turn, then the branches that start after its last turn (none
    where the conversation ends there): how a tree is drawn, the branches nested under the turn they part at."""

    nodes: list[K]
    branches: list[Stretch[K]] = field(default_factory=list)


def stretches(parents: Mapping[K, K | None]) -> list[Stretch[K]]:
    """The tree as nested stretches, one per root; children in the mapping's order (a topics file's order).

    A linear conversation is one stretch without branches; CAsT 2022 topic 133 is 1-1 … 1-4, then two branches:
    1-5, which parts again after it into 1-6 … 1-8 and 3-1 … 3-9, and 2-1 … 2-4."""
    children: dict[K, list[K]] = {node: [] for node in parents}
    roots: list[K] = []
    for node, parent in parents.items():
        (children[parent] if parent is not None and parent in children else roots).append(node)

    def stretch(start: K) -> Stretch[K]:
        nodes = [start]
        while len(children[nodes[-1]]) == 1:
            nodes.append(children[nodes[-1]][0])
        return Stretch(nodes, [stretch(child) for child in children[nodes[-1]]])

    return [stretch(root) for root in roots]


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key of natural (numeric-aware) order: digit runs compare as numbers, so ``81_2`` comes before ``81_10``,
    ``exp9`` before ``exp10`` and ``1-2`` before ``1-10``."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part)


def split_branch_number(number: str) -> tuple[int, int] | None:
    """(branch, position) of a branch-aware number such as "2-5"; None when it is not one."""
    match = BRANCH_NUMBER.match(number)
    return (int(match.group(1)), int(match.group(2))) if match else None


def flattened_system_number(user_number: str, next_user_numbers: Iterable[str]) -> str:
    """The number of the System turn that answers User turn ``user_number`` on a CAsT 2022 flattened path.

    The flattened file drops System turns' numbers; the tree file numbers them by two habits, recovered here from
    the User turns that follow the System turn on any path (``next_user_numbers``): a System turn usually
    continues its User turn's branch ("1-3" → "1-4"); an alternative answer to the same User turn opens a branch
    of its own, and the User turn after it is that branch's next ("3-1" is followed by "3-2"). So a User turn
    "k-j" after it (j > 1) names it "k-(j-1)", unless one of them names the usual "continue the branch" number (a
    User turn may also open a new branch or go on with a higher number of the same branch: "1-9" after "1-4").
    This reproduces all 203 System turn numbers of the tree file from its flattened twin.
    """
    branch, position = split_branch_number(user_number) or (0, 0)
    own = f"{branch}-{position + 1}"
    named = set()
    for following in next_user_numbers:
        parts = split_branch_number(following)
        if parts is not None and parts[1] > 1:
            named.add(f"{parts[0]}-{parts[1] - 1}")
    if not named or own in named:
        return own
    return min(named, key=lambda n: split_branch_number(n) or (0, 0))


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# A question that offers more rather than asks what the user meant (CAsT 2022 "suggestions").
_OFFER = re.compile(r"^(would you like|do you want to know more|shall i|are you interested|how about)\b", re.I)


def mixed_initiative(response: str) -> str:
    """Whether a System response takes the initiative: "clarification", "suggestion" or "" (an answer).

    CAsT 2022 marks no field for it; the rule is the one its topics follow: a System turn that *ends* with a
    question hands the turn back to the user (a question inside a quoted passage, "What is it? Yams that …", does
    not). An ending question that offers more ("Would you like to know about them?", "Are you interested in a
    specific way?") is a suggestion; any other ("Did you mean within the United Kingdom, United States, or
    Europe?") asks the user to clarify. On the 203 System turns of the 2022 tree: 9 clarifications, 3 suggestions.
    """
    text = response.strip()
    if not text.endswith("?"):
        return ""
    last = _SENTENCE_END.split(text)[-1]
    return SUGGESTION if _OFFER.match(last) else CLARIFICATION

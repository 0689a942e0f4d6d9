"""The rule CQR: a pronoun of the turn → the noun phrase it stands for, or the turn left alone when unsure.

A wrong rewrite ("Why doesn't it spoil?" → "Why doesn't bees spoil?") is worse than none, so the resolver
rewrites only when it is confident, and otherwise returns the raw utterance u_i:

1. Only the first third-person neuter pronoun (it, its, they, them, their) is resolved; "this", "that" and
   personal pronouns are left alone. An expletive "it" ("How long does it take …", "Is it safe to …") is no
   reference.
2. A noun of the same number earlier in the same turn ("Once the cancer breaks out, how likely is it to
   spread?") may be what the pronoun refers to: the turn is left alone.
3. The referent agrees in number with the pronoun: it / its need a singular noun phrase, they / them / their a
   plural one (so "does it" and "do they" stay right). Nouns that never stand for a topic ("type", "way",
   "difference" …, :data:`ecast.pipeline.anaphora.GENERIC_NOUNS`) are never referents.
4. Where it is looked for, first match wins:
   a. the previous response, when a sentence of it says the same thing of a noun phrase that the turn asks of
      the pronoun: "Why doesn't it spoil?" after a response ending "Honey never spoils." → "honey";
   b. the referent the previous turn's own pronoun of that number got ("Is it treatable?" → "How is it
      treated?" keeps "throat cancer");
   c. the previous user turn, itself resolved first, its first noun phrase of that number.
   Nothing found: the turn is left alone. (Looking further back, to the first turn, resolves more pronouns
   rightly on CAsT 2019 and 2020 but more wrongly on CAsT 2021; the resolver stays with the previous turn.)
5. "they do / they did" (people, seldom named before), "it'll" / "it's" (a clitic would cling to the referent)
   and a referent whose head noun the turn already says ("How is it different from a heat pump?") are left
   alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from ecast.pipeline import grammar
from ecast.pipeline.anaphora import COMMON_VERBS, GENERIC_NOUNS, singular
from ecast.pipeline.rules import tag_words

SINGULAR_PRONOUNS = frozenset({"it", "its"})
PLURAL_PRONOUNS = frozenset({"they", "them", "their"})
_POSSESSIVES = frozenset({"its", "their"})
_BE = frozenset({"is", "'s", "was", "be", "isn't", "wasn't"})
# "How long does it take", "It sounds like …", "What does it mean to …": "it" refers to nothing.
_TAKE = frozenset({"take", "takes", "took", "taking"})
_IMPERSONAL = _TAKE | frozenset(
    {"sound", "sounds", "seem", "seems", "seemed", "look", "looks", "appear", "appears", "mean", "means"}
    | {"cost", "costs"}
)
_SKIP = frozenset({"never", "not", "n't", "always", "often", "still", "also", "usually", "really"})


@lru_cache(maxsize=8192)
def _spans(text: str) -> tuple[tuple[int, int], ...]:
    return tuple(m.span() for m in grammar.TOKEN.finditer(text))


@lru_cache(maxsize=8192)
def _tagged(text: str) -> tuple[tuple[str, str], ...]:
    """(token, universal POS tag) per :data:`ecast.pipeline.grammar.TOKEN` token; punctuation gets PUNCT."""
    tokens = [text[a:b] for a, b in _spans(text)]
    index = [i for i, t in enumerate(tokens) if any(c.isalnum() for c in t)]
    tags = ["PUNCT"] * len(tokens)
    for i, tag in zip(index, tag_words([tokens[i] for i in index]), strict=True):
        tags[i] = tag
    return tuple(zip(tokens, tags, strict=True))


def _plural(word: str) -> bool:
    return singular(word) != word.lower().replace("’", "'")


SINGULAR_AUXILIARIES = frozenset(
    {"does", "doesn't", "is", "isn't", "was", "wasn't", "has", "hasn't", "does not", "is not", "has not"}
)


def breaks_agreement(text: str) -> bool:
    """A singular auxiliary directly before a plural noun that a verb follows: "Why does bees spoil?" (an
    automatic rewrite that put "bees" where the turn said "it")."""
    tagged = [t for t in _tagged(text) if t[1] != "PUNCT"]
    for i in range(len(tagged) - 2):
        (aux, _), (noun, tag), (_, after) = tagged[i], tagged[i + 1], tagged[i + 2]
        if aux.lower().replace("’", "'") in SINGULAR_AUXILIARIES and tag == "NOUN" and after in ("VERB", "AUX"):
            if _plural(noun):
                return True
    return False


def _nominal(token: tuple[str, str]) -> bool:
    # "What’s" and "Ziegler’s" are no part of a referent the resolver can put in a pronoun's place.
    return token[1] in ("NOUN", "PROPN", "ADJ") and "'" not in token[0] and "’" not in token[0]


def _phrases(tagged: Sequence[tuple[str, str]]) -> list[tuple[int, int]]:
    """(start, end) of each run of adjectives and nouns that ends in a noun."""
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(tagged):
        if _nominal(tagged[i]):
            j = i
            while j < len(tagged) and _nominal(tagged[j]):
                j += 1
            end = j
            while end > i and tagged[end - 1][1] == "ADJ":
                end -= 1
            if end - i > 1 and tagged[end - 1][0].lower() in COMMON_VERBS:
                end -= 1  # "When did social security start?": the tagger's noun "start" is the verb
            if end > i:
                out.append((i, end))
            i = j
        else:
            i += 1
    return out


def _render(tagged: Sequence[tuple[str, str]], start: int, end: int) -> str:
    return " ".join(w if tag == "PROPN" or w.isupper() else w.lower() for w, tag in tagged[start:end])


# A phrase a quantifier opens counts, it does not name ("so many dying" → "What can be done to stop many dying?").
QUANTIFIERS = frozenset({"many", "much", "few", "several", "most", "some", "any", "all", "more", "less", "enough"})


def _referent_ok(tagged: Sequence[tuple[str, str]], start: int, end: int, plural: bool) -> bool:
    head, tag = tagged[end - 1]
    if tag not in ("NOUN", "PROPN") or head.lower() in GENERIC_NOUNS or singular(head) in GENERIC_NOUNS:
        return False
    if tagged[start][0].lower() in QUANTIFIERS:
        return False
    return _plural(head) == plural


def _first_phrase(text: str, plural: bool) -> str | None:
    tagged = _tagged(text)
    for start, end in _phrases(tagged):
        if _referent_ok(tagged, start, end, plural):
            return _render(tagged, start, end)
    return None


def _stem(word: str) -> str:
    w = word.lower()
    for suffix in ("ing", "ed", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w


def _from_response(tagged: Sequence[tuple[str, str]], index: int, response: str, plural: bool) -> str | None:
    """The noun phrase the response says the same verb of ("Honey never spoils." for "Why doesn't it spoil?")."""
    verb = next(
        # the tagger often calls a verb after a pronoun a noun ("doesn't it spoil/NOUN")
        (w for w, tag in tagged[index + 1 : index + 3] if tag in ("VERB", "NOUN") and w.lower() not in _IMPERSONAL),
        None,
    )
    if verb is None:
        return None
    stem = _stem(verb)
    for sentence in re.split(r"(?<=[.!?])\s+", response):
        rtagged = _tagged(sentence)
        for k, (word, tag) in enumerate(rtagged):
            if tag not in ("VERB", "NOUN") or _stem(word) != stem:
                continue
            j = k
            while j > 0 and (rtagged[j - 1][1] in ("ADV", "AUX", "PART") or rtagged[j - 1][0].lower() in _SKIP):
                j -= 1
            for start, end in _phrases(rtagged):
                if end == j and _referent_ok(rtagged, start, end, plural):
                    phrase = _render(rtagged, start, end)
                    # "Honey never spoils.": a capital that only starts the sentence is no name
                    return phrase.lower() if re.search(rf"\b{re.escape(phrase.lower())}\b", response) else phrase
    return None


def _expletive(tagged: Sequence[tuple[str, str]], index: int) -> bool:
    """ "How long does it take", "Is it safe to …", "It is hard to …", "worth it": an "it" that refers to
    nothing."""
    after = [w.lower() for w, _ in tagged[index + 1 : index + 4]]
    tags = [t for _, t in tagged[index + 1 : index + 4]]
    if after[:1] and after[0] in _IMPERSONAL:
        return True
    if index > 0 and tagged[index - 1][0].lower() in ("do", "make", "worth"):
        return True  # "let's do it", "make it to the top", "Is sealing worth it?"
    if after[:1] and after[0] in _BE:
        after, tags = after[1:], tags[1:]
    return len(after) >= 2 and tags[0] == "ADJ" and after[1] in ("to", "that", "for")


def _resolve_one(
    history: Sequence[str], utterance: str, responses: Sequence[str], carried: tuple[str, bool] | None = None
) -> tuple[str, tuple[str, bool] | None]:
    """The turn with its first resolvable pronoun replaced, and the referent (phrase, plural) it got; ``carried``
    is the previous turn's referent, which a pronoun of the same number keeps."""
    tagged = _tagged(utterance)
    for index, (word, _) in enumerate(tagged):
        low = word.lower()
        if low not in SINGULAR_PRONOUNS and low not in PLURAL_PRONOUNS:
            continue
        plural = low in PLURAL_PRONOUNS
        if low == "it" and _expletive(tagged, index):
            continue
        following = tagged[index + 1][0].lower() if index + 1 < len(tagged) else ""
        if low == "they" and following in ("do", "did"):
            return utterance, None  # "What did they do to help?": people, who are seldom named before
        if following[:1] in ("'", "’"):
            return utterance, None  # "it'll", "it's": the clitic would cling to the referent
        if any(tag in ("NOUN", "PROPN") and _plural(w) == plural for w, tag in tagged[:index]):
            return utterance, None  # it may refer inside the turn
        previous_response = responses[len(history) - 1] if len(responses) >= len(history) and history else ""
        phrase = _from_response(tagged, index, previous_response, plural) if previous_response else None
        if phrase is None and carried is not None and carried[1] == plural:
            phrase = carried[0]
        if phrase is None and history:
            phrase = _first_phrase(history[-1], plural)
        if phrase is None or phrase.split()[-1].lower() in {w.lower() for w, _ in tagged}:
            return utterance, None  # nothing found, or "How is it different from a heat pump?" after "heat pump"
        referent = (phrase, plural)
        if low in _POSSESSIVES:
            phrase += "'" if phrase.endswith("s") else "'s"
        start, end = _spans(utterance)[index]
        if start == 0:
            phrase = phrase[:1].upper() + phrase[1:]
        return utterance[:start] + phrase + utterance[end:], referent
    return utterance, None


def resolve(history: Sequence[str], utterance: str, responses: Sequence[str] = ()) -> str:
    """r_i for u_i given the earlier raw turns and, aligned with them, their canonical responses ("" when
    unknown); every earlier turn is resolved first, so a chain of "it"s keeps its referent."""
    return _resolve(tuple(history), utterance, tuple(responses)) if history else utterance


# A permutation experiment rewrites every order of a conversation: the same (history, turn) pairs thousands of times.
@lru_cache(maxsize=8192)
def _resolve(history: tuple[str, ...], utterance: str, responses: tuple[str, ...]) -> str:
    responses = responses + ("",) * (len(history) - len(responses))
    resolved: list[str] = [history[0]]
    carried: tuple[str, bool] | None = None
    for i, turn in enumerate(history[1:], start=1):
        text, carried = _resolve_one(resolved, turn, responses[:i], carried)
        resolved.append(text)
    return _resolve_one(resolved, utterance, responses[: len(history)], carried)[0]

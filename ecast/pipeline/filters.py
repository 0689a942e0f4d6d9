"""Meaning checks for generated paraphrases: small named rules, each dropping an output that does not ask what its
source asks. The pipeline runs them after the grammar gate and counts every drop under the rule's reason.

Registry (:data:`RULES`, in the order they are tried; the first that fires names the drop):

- ``echo`` — "prompt echo": the model wrote its instructions or a label instead of (or before) the question
  ("Can you add this: What is done to stop them from dying?", "Rewrite: …", "Here is the question …",
  "Sure! …"), or talks about the question ("this question", "paraphrase", "same meaning") where the source does
  not.
- ``statement`` — the source asks and the output does not: it opens like a statement ("The reason honey does not
  spoil is that they eat honey, so why not?") or an exclamation ("What an enigma.") instead of with a question
  word, an auxiliary, a preposition + a question word, or a request ("Tell me …", "I would like to know …"), or
  it ends in a full stop with no question word or request at its start.
- ``entities`` — lost or swapped entities: a proper noun of the source is missing while a new one came in
  ("How does Amazon compare to Hulu?" for "How does Netflix compare to Hulu?"); the first noun of the source is
  missing and a third-person pronoun the source does not have stands in for it in a one-sentence output
  ("How does their lack spoil something?" for "Why does honey not spoil?": a paraphrase of m_i stands alone, so
  the pronoun points nowhere); or more than half of the source's content nouns are missing *and* the output
  brings nouns that are neither in the source nor in the conversation so far ("What is the purpose of their
  demise?" for "What can be done to stop bees dying?"); or, first, a content noun of the prompt's few-shot
  examples that neither the source nor the conversation has ("Why does a bee ruin a garage door opener?" for
  "Why doesn't honey spoil?" with garage-door examples: the examples' topic leaked into the output). An
  example's topic is the nouns it keeps from source to paraphrase, so a rewording word it shares with a
  faithful output ("habitat", "price") is not one.
  Words are compared by a crude stem (lower case, first five letters after dropping a plural s), so "cancer of
  the throat" keeps "throat cancer".
- ``polarity`` — a polarity flip: a negation (not, n't, no, never, without, none, nothing, cannot) added or
  removed; one side of an antonym pair (cause/prevent, increase/decrease, benefit/risk, advantage/disadvantage,
  pros/cons, best/worst, more/less …) brought in where the source has the other; or a means turned into a cause:
  the source asks how to stop / prevent / avoid something (a base form: "to stop bees dying", "can prevent")
  and the output asks what *is* stopping it ("What is stopping bees from dying?", which asks what keeps them
  alive).
- ``additions`` — the output asks more than its source: an extra sentence with nouns new to the conversation
  ("Why do cats eat plastic? What is their primary predator?"), or a content word repeated beyond the source's
  count ("How likely is cancer to spread from breast cancer to lobular cancer breast cancer?").

Each rule is a function ``(text, source, context, shots) -> bool`` (True: drop), with ``context`` the
conversation's earlier turns joined and ``shots`` the prompt's example pairs (source, paraphrase). Tests work
each one by hand on real outputs (tests/ecast/pipeline/test_filters.py) and run the registry over every curated
ECAsT manual paraphrase of CAsT 2019–2020, which it must almost always pass.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ecast.pipeline import rules
from ecast.pipeline.grammar import CONJUNCTIONS, FUNCTION_WORDS, PREPOSITIONS

ECHO = "prompt echo"
STATEMENT = "statement for a question"
ENTITIES = "lost or swapped entities"
POLARITY = "polarity flip"
ADDITIONS = "adds to its source"
LOST_WORDS = "lost words of its source"  # CQR and context removal (lost_words), not a paraphrase rule


@dataclass(frozen=True)
class Rule:
    """A named meaning check and the reason its drops are counted under."""

    name: str
    reason: str
    drops: Callable[[str, str, str, Sequence[tuple[str, str]]], bool]


def _words(text: str) -> list[str]:
    return [w.lower().replace("’", "'") for w in rules.tokenize(text) if w[0].isalnum()]


# --- echo -------------------------------------------------------------------------------------------------------------
_ECHO_START = re.compile(
    r"^\s*(?:sure|okay|ok|certainly|of course|here(?:'s| is| are)|rewrite|rewritten|rephrase|rephrased|paraphrase"
    r"|paraphrased|question|answer|original|output|input|note|example|last question|conversation|reply)\b",
    re.I,
)
# "Can you add this: …", "New question: …": a label with an instruction word before a colon (not "Which is
# better: X or Y?", not "The Avengers or the Justice League: which came first?").
_LABEL = re.compile(r"^([^?:]{0,40}):\s+\S")
_LABEL_WORDS = frozenset(
    {
        "add", "rewrite", "rewritten", "rephrase", "rephrased", "paraphrase", "paraphrased", "question", "answer",
        "output", "input", "here", "sure", "example", "new", "original", "query", "reply", "this", "result",
    }
)  # fmt: skip
_ECHO_WORDS = (
    "rewrite",
    "rephrase",
    "paraphrase",
    "same meaning",
    "different words",
    "this question",
    "the question",
    "add this",
    "reply with",
    "search question",
)


def is_echo(text: str, source: str, context: str = "", shots: Sequence[tuple[str, str]] = ()) -> bool:
    """The model echoed its prompt or labelled its answer instead of asking the question."""
    if _ECHO_START.match(text) and not _ECHO_START.match(source):
        return True
    label = _LABEL.match(text)
    if label and set(_words(label.group(1))) & _LABEL_WORDS:
        return True
    low, src = text.lower(), source.lower()
    return any(w in low and w not in src for w in _ECHO_WORDS)


# --- statement --------------------------------------------------------------------------------------------------------
QUESTION_WORDS = frozenset({"what", "which", "who", "whom", "whose", "why", "how", "where", "when", "whether"})
AUXILIARY_STARTS = frozenset(
    {
        "is", "are", "was", "were", "am", "do", "does", "did", "has", "have", "had", "can", "could", "will",
        "would", "shall", "should", "may", "might", "must", "isn't", "aren't", "don't", "doesn't", "didn't",
        "can't", "won't", "wouldn't", "shouldn't",
    }
)  # fmt: skip
REQUEST_STARTS = frozenset(
    {
        "tell", "describe", "explain", "list", "give", "name", "compare", "show", "find", "define", "summarize",
        "summarise", "discuss", "talk", "provide", "please", "help", "outline", "identify", "recommend", "suggest",
    }
)  # fmt: skip
_LINKERS = PREPOSITIONS | CONJUNCTIONS | {"so", "also", "then", "now", "according", "besides", "apart"}
# "I would like to know …", "I want to learn …", "I'm curious about …", "I need information on …".
_REQUEST = re.compile(r"^\s*i(?:'d|'m| would| want| need| wonder| am)\b", re.I)


def asks(text: str) -> bool:
    """The text asks something: it ends in "?" or one of its sentences opens like a question or a request."""
    return bool(_words(text)) and (text.rstrip().endswith("?") or opens_like_question(text))


def _first_word(clause: str) -> str:
    words = _words(clause)
    return words[0].removesuffix("'s").removesuffix("'re") if words else ""


# "What an enigma.", "What a question!", "How strange.": a question word that opens an exclamation.
_EXCLAMATION = re.compile(r"^\s*(?:what an?\b|how (?:very |so |really )?\w+[.!]?$)", re.I)


def opens_like_question(text: str) -> bool:
    """One sentence of the text opens with a question word, an auxiliary or a request ("What's …", "Tell me …",
    "I'd like to know …"), or with a preposition or conjunction whose clause leads to one ("In what year …",
    "Before toilets, what did people use?", "If I am allergic, which dog …")."""
    for sentence in re.split(r"(?<=[.?!])\s+", text.strip()):
        if _EXCLAMATION.match(sentence) and not sentence.rstrip().endswith("?"):
            continue  # "What an enigma." exclaims
        first = _first_word(sentence)
        if first in QUESTION_WORDS | AUXILIARY_STARTS | REQUEST_STARTS or _REQUEST.match(sentence):
            return True
        if first in _LINKERS:
            words = _words(sentence)
            clauses = [_first_word(c) for c in re.split(r"[,;]", sentence)[1:]]
            if any(w in QUESTION_WORDS for w in words[1:4]) or any(
                c in QUESTION_WORDS | AUXILIARY_STARTS for c in clauses
            ):
                return True
    return False


def is_statement(text: str, source: str, context: str = "", shots: Sequence[tuple[str, str]] = ()) -> bool:
    """The source asks and the output states: it opens like a statement, or it ends in a full stop with no
    question or request at its start."""
    return asks(source) and not opens_like_question(text)


# --- entities ---------------------------------------------------------------------------------------------------------
_GENERIC_NOUNS = frozenset(
    {
        "thing", "things", "way", "ways", "type", "types", "kind", "kinds", "example", "examples", "difference",
        "differences", "reason", "reasons", "information", "something", "anything", "lot", "part", "parts",
        "aspect", "aspects", "detail", "details", "fact", "facts", "factor", "factors", "role", "use", "uses",
        "effect", "effects", "impact", "benefit", "benefits", "option", "options", "one", "ones", "people",
        "person", "someone", "case", "cases", "point", "points", "sort", "sorts", "number", "list", "idea",
        "meaning", "definition", "purpose", "step", "steps", "process", "method", "methods", "feature",
        "features", "characteristic", "characteristics", "approach", "tip", "tips", "advice", "today", "time",
    }
)  # fmt: skip


# Not "it", which is often a dummy subject ("Is it true that …", "How long does it take …").
_THIRD_PERSON = frozenset({"its", "they", "their", "them", "theirs", "his", "him", "her"})


def _stem(word: str) -> str:
    w = word.lower().replace("’", "'").removesuffix("'s")
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    return w[:5]


def _nouns(text: str) -> tuple[set[str], set[str]]:
    """Crude stems of the content nouns (generic ones left out) and of the proper nouns of a text."""
    tokens = rules.tokenize(text)
    tags = rules.pos_tag(tokens)
    nouns, proper = set(), set()
    for tok, tag in zip(tokens, tags, strict=True):
        if not tok[0].isalnum() or tok.lower() in _GENERIC_NOUNS:
            continue
        if tag == "PROPN" and not tok.isupper():  # "US" / "DNA" may be spelled out in a paraphrase
            proper.add(_stem(tok))
        if tag in ("NOUN", "PROPN"):
            nouns.add(_stem(tok))
    return nouns, proper


def _first_noun(text: str) -> str:
    tokens = rules.tokenize(text)
    for tok, tag in zip(tokens, rules.pos_tag(tokens), strict=True):
        if tag in ("NOUN", "PROPN") and tok.lower() not in _GENERIC_NOUNS:
            return _stem(tok)
    return ""


def _stems(text: str) -> set[str]:
    return {_stem(w) for w in _words(text)}


def shot_topics(shots: Sequence[tuple[str, str]]) -> set[str]:
    """Crude stems of the nouns each example keeps from its source to its paraphrase: its topic ("garage door
    opener"), not the rewording words a faithful paraphrase may share with it ("price", "habitat")."""
    out: set[str] = set()
    for source, paraphrase in shots:
        out |= _nouns(source)[0] & _nouns(paraphrase)[0]
    return out


def is_entity_swap(text: str, source: str, context: str = "", shots: Sequence[tuple[str, str]] = ()) -> bool:
    """A content noun of the prompt's examples (``shots``) that neither the source nor the conversation has; a
    proper noun of the source gone while one new to the conversation came in; or more than half of the source's
    content nouns gone while nouns new to the conversation came in."""
    out = _stems(text)
    known = _stems(source) | _stems(context)
    out_nouns, out_proper = _nouns(text)
    if shots and (out_nouns - known) & shot_topics(shots):
        return True  # "Why does a bee ruin a garage door opener?": the examples' topic leaked in
    src_nouns, src_proper = _nouns(source)
    if not src_nouns:
        return False
    if src_proper - out and out_proper - known:
        return True
    missing = src_nouns - out
    if _first_noun(source) in missing and re.search(r"\w[.?!]\s+\w", text.strip()) is None:
        # "their lack" for "honey": a paraphrase of m_i stands alone, so the pronoun points nowhere
        if (set(_words(text)) & _THIRD_PERSON) - set(_words(source)):
            return True
    return 2 * len(missing) > len(src_nouns) and bool(out_nouns - known)


# --- polarity ---------------------------------------------------------------------------------------------------------
NEGATIONS = frozenset({"not", "n't", "no", "never", "without", "none", "nothing", "cannot", "nobody", "neither"})
ANTONYMS = (
    ("cause", "prevent"),
    ("increase", "decrease"),
    ("increase", "reduce"),
    ("raise", "lower"),
    ("benefit", "risk"),
    ("benefit", "danger"),
    ("advantage", "disadvantage"),
    ("pro", "con"),
    ("best", "worst"),
    ("more", "less"),
    ("most", "least"),
    ("good", "bad"),
    ("positive", "negative"),
    ("before", "after"),
    ("gain", "lose"),
    ("high", "low"),
    ("safe", "dangerous"),
    ("strength", "weakness"),
    ("similar", "different"),
    ("similarity", "difference"),
)
_INHIBIT = r"(?:stop|prevent|avoid|halt|end|cure|reverse|fight|combat|reduce|save)"
_MEANS = re.compile(
    rf"\b(?:to|can|could|should|would|will|might|do|does|i|we|you|they|best way to)\s+{_INHIBIT}\b", re.I
)
_CAUSE = re.compile(r"\b(?:is|are|was|were)\s+(?:stopping|preventing|avoiding|halting|ending|keeping)\b", re.I)


# Words that carry a negation of their own ("untreated", "without", "reject"): a paraphrase may trade one for
# "not" ("What happens if Lyme disease is not treated?"), so the negation count is not compared when either side
# has one.
IMPLICIT_NEGATIONS = frozenset(
    {
        "without", "lack", "lacking", "absence", "absent", "against", "avoid", "reject", "rejected", "refuse",
        "fail", "failed", "except", "besides", "instead", "contrary", "rather", "quit", "neglect", "ignore",
        "faithless", "free", "less", "apart", "outside", "opposed", "other",
    }
)  # fmt: skip
_NEGATIVE_PREFIX = re.compile(r"^(?:un(?!der|i|til|less)|non|in(?:correct|valid|eligible|effective|sufficient))\w{3,}")


# "No, I meant …", "What? No. Will eating plastic …": a "no" that answers the system, not one that negates.
_DISCOURSE_NO = re.compile(r"(?:^|(?<=[.?!]))\s*no\s*[,.!?;:-]", re.I)


def _negations(text: str) -> int:
    text = re.sub(r"\bor not\b", "", text, flags=re.I)  # "legal or not?" asks the same as "legal?"
    text = _DISCOURSE_NO.sub(" ", text)
    return sum(1 for w in _words(text) if w in NEGATIONS or w.endswith("n't"))


def _implicit_negation(text: str) -> bool:
    return any(w in IMPLICIT_NEGATIONS or _NEGATIVE_PREFIX.match(w) for w in _words(text))


def _forms(word: str) -> re.Pattern[str]:
    return re.compile(rf"\b{word}(?:s|es|d|ed|ing|ive|ion|ions)?\b", re.I)


def is_polarity_flip(text: str, source: str, context: str = "", shots: Sequence[tuple[str, str]] = ()) -> bool:
    """Negation added or removed, an antonym brought in for its pair, or "how to stop X" turned into "what is
    stopping X"."""
    if (_negations(text) > 0) != (_negations(source) > 0):
        if not (_implicit_negation(text) or _implicit_negation(source)):
            return True
    for a, b in ANTONYMS:
        for this, other in ((a, b), (b, a)):
            if _forms(this).search(source) and not _forms(this).search(text) and _forms(other).search(text):
                if not _forms(other).search(source):
                    return True
    return bool(_MEANS.search(source) and not _CAUSE.search(source) and _CAUSE.search(text))


def content_stems(text: str) -> set[str]:
    """Crude stems of a text's content words (function words left out)."""
    return {_stem(w) for w in _words(text) if w not in FUNCTION_WORDS and w not in _GENERIC_NOUNS}


def lost_words(text: str, source: str, context: str = "") -> set[str]:
    """Content words of the source that the text lacks and the conversation (``context``) never said. A rewrite
    adds referents (CQR) or puts a pronoun for words the conversation already said (context removal); words it
    loses beyond those change the question: "What is the primary reason?" for "What is the primary reason behind
    the death of bees?" after a conversation about bees loses "death"."""
    return content_stems(source) - content_stems(text) - content_stems(context)


# --- additions --------------------------------------------------------------------------------------------------------
def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.?!])\s+", text.strip()) if _words(s)]


def _repeats(text: str, source: str) -> bool:
    """A content word said three times, a run of two content words said twice, or a word said again right after
    itself ("cruel and cruel"), more often than the source says it."""
    words, src = _words(text), _words(source)

    def content(ws: list[str]) -> list[str]:
        return [_stem(w) if w not in FUNCTION_WORDS else "" for w in ws]

    mine, theirs = content(words), content(src)
    said, counts = Counter(theirs), Counter(mine)
    if any(w and n >= 3 and n > said[w] for w, n in counts.items()):
        return True
    pairs = Counter(p for p in zip(mine, mine[1:], strict=False) if all(p))
    src_pairs = Counter(zip(theirs, theirs[1:], strict=False))
    if any(n >= 2 and n > src_pairs[p] for p, n in pairs.items()):
        return True
    return any(w and w in mine[i + 1 : i + 3] and w not in theirs for i, w in enumerate(mine))


def is_addition(text: str, source: str, context: str = "", shots: Sequence[tuple[str, str]] = ()) -> bool:
    """The output asks more than its source: a sentence beyond the source's count that brings nouns neither the
    source nor the conversation has ("Why do cats eat plastic? What is their primary predator?"; a second
    wording of the same question, "… Why doesn't it go off?", passes), or words repeated beyond the source
    ("… from breast cancer to lobular cancer breast cancer?", "a cruel and cruel way", "What is a cat's slow
    blink, it's a sign of a cat's slow blink.")."""
    sentences, known = _sentences(text), _stems(source) | _stems(context)
    extra = sentences[len(_sentences(source)) :]
    return any(_nouns(s)[0] - known for s in extra) or _repeats(text, source)


RULES: tuple[Rule, ...] = (
    Rule("echo", ECHO, is_echo),
    Rule("statement", STATEMENT, is_statement),
    Rule("polarity", POLARITY, is_polarity_flip),
    Rule("entities", ENTITIES, is_entity_swap),
    Rule("additions", ADDITIONS, is_addition),
)
REASONS = tuple(r.reason for r in RULES)


def first_failure(text: str, source: str, context: str = "", shots: Sequence[tuple[str, str]] = ()) -> str:
    """The reason of the first rule that drops the text, or "" when every rule passes it (``shots``: the prompt's
    example pairs, whose topics the output must not bring in)."""
    for rule in RULES:
        if rule.drops(text, source, context, shots):
            return rule.reason
    return ""

"""Context removal by anaphora, the default CR rule: p^m → p^r the way a person asks in the middle of a
conversation (ECAsT Stage 3). The paper's "Entity Removal" baseline deletes nouns and leaves "What are the of?";
this rule instead replaces the one entity the conversation already established with the words a person uses.

1. The context entity is a noun phrase of the text whose words all occur in the conversation so far (earlier
   raw turns and, when known, their manual rewrites; plural and singular match), headed by a noun that is not
   generic ("role", "type", "difference" … never stand for the topic). A chain "A of/for/in/on B" is one entity
   when all of it was said before. Several candidates: the longest, then the most recently mentioned.
2. It is replaced by the anaphor for its number and place in the sentence:

   ======================================  ================================================================
   "the symptoms of throat cancer"         "its symptoms" ("their" when plural; "the X of E" → "its X")
   "Is throat cancer treatable?"           "Is it treatable?" (subject: it / they)
   "stop bees from dying"                  "stop them from dying" (after a verb or preposition: it / them)
   "Salt Lake City's economy"              "its economy"
   "in Salt Lake City", "at the EU"        "there" (a proper-noun place after in / at)
   "so many bees"                          "so many of them" (a quantifier keeps its "of")
   "What type of orange tree has thorns?"  "What type has thorns?" (after type / kind / sort / variety)
   "a new garage door opener"              "a new one" (only the head was said before, after an adjective)
   "bee habitat" (only "bee" said before)  "their habitat" (a said-before modifier becomes a possessive)
   ======================================  ================================================================

3. When no anaphor fits, a final prepositional phrase after a noun whose object the conversation already named
   is left out, as users do ("What are the alternatives to surgery for invasive lobular cancer?" → "What are
   the alternatives to surgery?").
4. Every rewrite must pass :func:`ecast.pipeline.grammar.problems`; the next candidate is tried otherwise, and
   when none is left the text comes back unchanged (the pipeline then drops the pair as identical to its
   source, unless the turn needs no context). The rule never deletes a noun and never leaves broken text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ecast.pipeline import grammar
from ecast.pipeline.rules import tag_words

# Nouns that head many questions and never stand for the conversation's topic on their own.
GENERIC_NOUNS = frozenset(
    {
        "role", "type", "kind", "sort", "variety", "form", "way", "thing", "difference", "example", "impact",
        "importance", "cause", "effect", "benefit", "advantage", "disadvantage", "risk", "pro", "con",
        "history", "information", "fact", "lot", "part", "number", "amount", "people", "person", "time", "year",
        "day", "use", "place", "problem", "question", "reason", "rule", "step", "tip", "idea", "option",
        "purpose", "meaning", "definition", "name", "list", "detail", "feature", "characteristic", "aspect",
        "factor", "result", "process", "method", "level", "stage", "phase", "rate", "cost", "price", "size",
        "issue", "point", "case", "area", "something", "anything", "everything", "nothing", "one", "someone", "anyone",
        "other", "more", "most", "best", "first", "last", "same", "main", "different", "important", "good",
        "new", "old", "big", "small", "many", "much", "few", "several", "common", "popular", "major",
    }
)  # fmt: skip
KIND_NOUNS = frozenset({"type", "kind", "sort", "variety", "varieties", "types", "kinds", "sorts", "breed", "brand"})
# "interested in X" is not "interested there".
_NOT_A_PLACE_AFTER = frozenset(
    {"interested", "involved", "invested", "engaged", "included", "participate", "believe", "specialize", "result"}
)
_DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those", "my", "your", "our", "its", "their"})
_QUANTIFIERS = frozenset({"many", "much", "some", "several", "most", "few", "all", "both", "any"})
_QUANTIFIER_ADVERBS = frozenset({"so", "too", "how", "very"})
_INTENSIFIERS = frozenset({"most", "more", "least", "less", "very", "really", "highly", "extremely"})
_CONNECTORS = frozenset({"of", "for", "in", "on"})
_OBJECT_AFTER = frozenset({"to", "than", "about", "like", "with", "from", "for", "into", "between", "against"})
_SENTENCE_END = frozenset(".?!")
_IRREGULAR_PLURALS = {
    "people": "person", "children": "child", "men": "man", "women": "woman", "feet": "foot", "teeth": "tooth",
    "mice": "mouse", "geese": "goose", "data": "datum", "media": "medium", "criteria": "criterion",
    "phenomena": "phenomenon", "bacteria": "bacterium", "cattle": "cattle", "police": "police",
}  # fmt: skip
_INVARIANT = frozenset({"series", "species", "news", "means", "headquarters", "crossroads", "aircraft", "has", "was"})
_SINGULAR_ICS = frozenset(
    {
        "physics", "economics", "mathematics", "politics", "ethics", "statistics", "genetics", "linguistics",
        "athletics", "gymnastics", "aerobics", "logistics", "robotics", "acoustics", "dynamics", "mechanics",
        "electronics", "analytics", "aesthetics", "genomics", "informatics", "semantics", "phonetics",
    }
)  # fmt: skip
_SINGULAR_AUX = frozenset({"is", "was", "does", "has", "'s"})
_PLURAL_AUX = frozenset({"are", "were", "do", "have", "'re", "'ve"})
# A noun phrase right after these is a predicate ("be considered apex predators"), not the entity.
_PREDICATE_AFTER = frozenset({"be", "been", "become", "became", "becomes", "considered", "called", "named", "as"})
_COORDINATION = frozenset({"and", "or", "nor", "versus", "vs", "&", "/"})
_DO_AND_MODALS = frozenset({"do", "does", "did", "will", "would", "can", "could", "should", "may", "might", "must"})
# A noun phrase that starts right after one of these lost its first words to the tagger ("any super | car").
_CUT_AFTER = frozenset({"the", "a", "an", "my", "your", "our", "its", "their"}) | _QUANTIFIERS
_NP_START = frozenset({"DET", "NOUN", "PROPN", "ADJ", "NUM"})
_ADJECTIVE_SUFFIXES = ("able", "ible", "ous", "ful", "less")
_POSSESSIVE_PRONOUNS = frozenset({"my", "your", "his", "her", "its", "our", "their"})
# Verbs the tagger often calls nouns after a subject in a question ("Why didn't Biblical poetry use rhymes?").
COMMON_VERBS = frozenset(
    {
        "affect", "work", "compare", "last", "spoil", "use", "differ", "help", "cost", "make", "mean", "come",
        "go", "happen", "change", "impact", "influence", "cause", "get", "need", "start", "stop", "grow", "live",
        "eat", "die", "kill", "look", "feel", "taste", "smell", "sound", "seem", "play", "run", "fly", "move",
        "spread", "develop", "evolve", "form", "lead", "relate", "react", "respond", "reproduce", "survive",
        "outweigh", "affects", "contribute", "depend", "result", "take", "give", "keep", "hold", "show", "say",
        "tell", "know", "think", "want", "like", "become", "begin", "end", "fit", "fail", "improve", "increase",
        "decrease", "reduce", "produce", "provide", "require", "include", "involve", "compete", "contain",
    }
)  # fmt: skip
_MASCULINE = frozenset({"he", "him", "his", "himself"})
_FEMININE = frozenset({"she", "her", "hers", "herself"})


def singular(word: str) -> str:
    """A lower-cased word's singular by English suffix rules ("bees" → "bee", "varieties" → "variety")."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    if w in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[w]
    if w in _INVARIANT or w in _SINGULAR_ICS or len(w) <= 3 or w.endswith(("ss", "us", "is", "ous", "'")):
        return w
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith(("ches", "shes", "xes", "zes", "sses")):
        return w[:-2]
    if w.endswith("s"):
        return w[:-1]
    return w


@dataclass
class _Tok:
    text: str
    start: int
    end: int
    tag: str
    key: str

    @property
    def low(self) -> str:
        return self.text.lower().replace("’", "'")

    @property
    def is_word(self) -> bool:
        return any(c.isalnum() for c in self.text) or self.low in ("'s", "n't")


def _analyse(text: str) -> list[_Tok]:
    toks = [_Tok(m.group(), m.start(), m.end(), "PUNCT", "") for m in grammar.TOKEN.finditer(text)]
    words = [t for t in toks if t.is_word]
    for tok, tag in zip(words, tag_words([t.text for t in words]), strict=True):
        tok.tag = tag
        tok.key = singular(tok.text)
    for tok in toks:  # the tagger has no clitics of its own
        if tok.low == "'s":
            tok.tag = "PART"
    return toks


def _is_plural(tok: _Tok) -> bool:
    if tok.tag == "PROPN":
        return bool(re.fullmatch(r"[A-Z]{2,}s", tok.text))  # "VCs", "GMOs"; "Paris", "Texas" are one place
    return singular(tok.text) != tok.low


def _content(tok: _Tok) -> bool:
    return tok.is_word and not grammar._function_word(tok.text)


@dataclass
class _History:
    latest: dict[str, int]  # content-word key → index of the latest utterance that has it
    nouns: set[str]  # keys tagged as nouns somewhere in the history
    plural: dict[str, bool]  # key → whether its latest mention was plural
    nominal: set[str] = field(default_factory=set)  # keys used in a noun phrase (noun, adjective, number)


def _history(history: Sequence[str]) -> _History:
    hist = _History({}, set(), {})
    for index, utterance in enumerate(history):
        toks = _analyse(utterance)
        _fix_tags(toks, hist)
        for tok in toks:
            if _content(tok):
                hist.latest[tok.key] = index
                hist.plural[tok.key] = _is_plural(tok)
                if tok.tag in ("NOUN", "PROPN"):
                    hist.nouns.add(tok.key)
                if tok.tag in ("NOUN", "PROPN", "ADJ", "NUM"):
                    hist.nominal.add(tok.key)
    return hist


def _fix_tags(toks: list[_Tok], hist: _History) -> None:
    """Corrections the perceptron tagger needs on short questions."""
    for i, tok in enumerate(toks):
        prev = toks[i - 1] if i > 0 else None
        nxt = toks[i + 1] if i + 1 < len(toks) else None
        before_noun = nxt is not None and nxt.tag in ("NOUN", "PROPN")
        after_subject = prev is not None and prev.tag in ("NOUN", "PROPN", "PRON")
        # A word said before, called a verb in front of a noun ("to bee habitat", "could smart garage door
        # openers"); after a subject it is the verb ("bees make honey").
        mistagged = tok.tag not in ("NOUN", "PROPN", "ADJ", "NUM") and _content(tok)  # "Is throat/PRON cancer"
        # Not a verb said as a verb before ("for a cat to eat plastic" stays a verb); "super/X cars" is retagged.
        said = tok.key in hist.nominal or (tok.key in hist.latest and tok.tag == "X")
        if mistagged and said and before_noun and not after_subject:
            tok.tag = "NOUN" if tok.key in hist.nouns else "ADJ"
        # "a standing desk": a participle between an article and a noun modifies the noun.
        elif (
            tok.tag == "VERB"
            and tok.low.endswith(("ing", "ed"))
            and before_noun
            and prev is not None
            and (prev.low in ("a", "an", "the"))
        ):
            tok.tag = "ADJ"
        # "my garage door opener stopped": a word used as a noun before and tagged otherwise after a noun is the
        # head of that noun phrase; so is a gerund between two nouns ("GMO food labeling rules").
        elif tok.tag in ("ADV", "VERB", "ADJ") and prev is not None and prev.tag in ("NOUN", "PROPN"):
            gerund = tok.low.endswith("ing") and before_noun
            if tok.key in hist.nouns or (gerund and not _is_plural(prev)):
                tok.tag = "NOUN"
        # "Is throat cancer treatable?": an adjective closing the clause after a noun.
        if tok.tag == "NOUN" and tok.low.endswith(_ADJECTIVE_SUFFIXES) and prev is not None and prev.tag == "NOUN":
            if nxt is None or not nxt.is_word:
                tok.tag = "ADJ"
        # "what causes throat cancer": a third-person verb right after "what" / "who" before a noun phrase.
        if tok.tag == "NOUN" and prev is not None and prev.low in ("what", "who") and tok.low.endswith("s"):
            if nxt is not None and nxt.tag in _NP_START:
                tok.tag = "VERB"
        # "a certain type of orange": a word used in a noun phrase before, closing this one, is its noun.
        if tok.tag == "ADJ" and tok.key in hist.nouns and prev is not None and prev.low in ("of", "the", "a", "an"):
            if nxt is None or nxt.tag not in ("NOUN", "PROPN", "ADJ"):
                tok.tag = "NOUN"
        # "the garage door opener stopping working": a gerund after a noun, before another verb, is a verb.
        if tok.tag == "NOUN" and tok.low.endswith("ing") and prev is not None and prev.tag == "NOUN":
            if tok.key not in hist.nouns and nxt is not None and (nxt.low.endswith("ing") or nxt.tag in ("DET", "ADP")):
                tok.tag = "VERB"
        # "so many bees dying": a gerund right after a plural noun is the verb.
        if tok.tag == "NOUN" and tok.low.endswith("ing") and prev is not None and prev.tag == "NOUN":
            if _is_plural(prev):
                tok.tag = "VERB"
    # Do-support and modals: "How does the DNA-based method work for …?", "How long does an asphalt driveway
    # last?" have the verb after the subject; when the tagger finds none there (gerunds aside), the verb is the
    # first common verb after a noun or pronoun, else the last base-form word after one before a preposition.
    for i, tok in enumerate(toks):
        if tok.low not in _DO_AND_MODALS or tok.tag != "AUX":
            continue
        rest = []
        for t in toks[i + 1 :]:
            if t.text in _SENTENCE_END:
                break
            rest.append(t)
        words = [t for t in rest if t.low not in ("n't", "not")]
        # The subject comes first: a "verb" right after the auxiliary, before a noun, is the subject's noun
        # ("Why doesn't honey/VERB spoil/NOUN?").
        first = words[0] if words and tok.low in ("do", "does", "did") else None  # "What can damage …" is no inversion
        if first is not None and first.tag == "VERB" and not first.low.endswith("ing") and _content(first):
            if len(words) >= 2 and words[1].tag in ("NOUN", "ADJ"):
                # a noun said before ("bees"), else a modifier ("What can smart garage door openers achieve?")
                first.tag = "NOUN" if first.key in hist.nouns or words[1].tag == "ADJ" else "ADJ"
        if any(t.tag == "AUX" or (t.tag == "VERB" and not t.low.endswith("ing")) for t in rest):
            continue
        after_noun = [
            t
            for k, t in enumerate(rest)
            if k > 0
            and rest[k - 1].tag in ("NOUN", "PROPN", "PRON", "ADV")
            and rest[k - 1].low not in _POSSESSIVE_PRONOUNS
            and t.tag in ("NOUN", "ADJ", "ADV", "PROPN")
        ]
        common = [
            t
            for k, t in enumerate(rest)
            if t.low in COMMON_VERBS
            and k > 0
            and t.tag in ("NOUN", "ADJ", "ADV", "PROPN")
            and rest[k - 1].tag in ("NOUN", "PROPN", "PRON", "ADV", "ADJ")
            and rest[k - 1].low not in _POSSESSIVE_PRONOUNS
        ]
        if common:
            common[0].tag = "VERB"
            continue
        head_run = []
        for t in rest:
            if t.tag in ("ADP", "PUNCT", "SCONJ", "CCONJ", "PART") and t.low != "n't":
                break
            head_run.append(t)
        base = [t for t in after_noun if t in head_run and not _is_plural(t) and not t.low.endswith(("ed", "ing"))]
        if base:
            base[-1].tag = "VERB"


@dataclass
class _NP:
    start: int  # first token (determiner or quantifier phrase included)
    body: int  # first token of the words after the determiner
    end: int  # one past the head noun
    det: str  # lower-cased determiner ("" when none)
    quantifier: bool


_BODY = ("ADJ", "NOUN", "PROPN", "NUM")


def _noun_phrases(toks: list[_Tok]) -> list[_NP]:
    out: list[_NP] = []
    i = 0
    while i < len(toks):
        start, det, quant = i, "", False
        j = i
        if toks[j].low in _QUANTIFIER_ADVERBS and j + 1 < len(toks) and toks[j + 1].low in _QUANTIFIERS:
            j, quant = j + 2, True
        elif toks[j].low in _QUANTIFIERS and toks[j].tag in ("DET", "ADJ"):
            j, quant = j + 1, True
        elif toks[j].low in _DETERMINERS and toks[j].tag in ("DET", "PRON"):
            det, j = toks[j].low, j + 1
        body = j
        while (
            j < len(toks)
            and toks[j].is_word
            and (
                toks[j].tag in _BODY
                # "the most reliable garage door opener"
                or (toks[j].low in _INTENSIFIERS and j + 1 < len(toks) and toks[j + 1].tag == "ADJ")
            )
        ):
            j += 1
        end = j
        while end > body and toks[end - 1].tag not in ("NOUN", "PROPN"):
            end -= 1
        if end > body:
            out.append(_NP(start, body, end, det, quant))
            i = end
        else:
            i += 1
    return out


@dataclass
class _Candidate:
    rank: int  # 3 pronoun, 2 "one", 1 possessive of a modifier
    given: int  # content words said before
    recency: int
    position: int
    render: tuple[int, int, str]  # (char start, char end, replacement)


_PRONOUNS = {
    "": {"subject": "it", "object": "it", "possessive": "its"},
    "m": {"subject": "he", "object": "him", "possessive": "his"},
    "f": {"subject": "she", "object": "her", "possessive": "her"},
}


def _pronoun(plural: bool, case: str, gender: str = "") -> str:
    """The pronoun for a number, a case (subject, object, possessive) and a gender ("", "m", "f")."""
    if plural:
        return {"subject": "they", "object": "them", "possessive": "their"}[case]
    return _PRONOUNS[gender][case]


def _gender(texts: Sequence[str]) -> str:
    """ "m" or "f" when the conversation refers to someone with only he/him/his or only she/her, "?" when with
    both, "" when with neither."""
    words = {w.lower() for t in texts for w in grammar.tokenize(t)}
    masculine, feminine = bool(words & _MASCULINE), bool(words & _FEMININE)
    return "?" if masculine and feminine else "m" if masculine else "f" if feminine else ""


def _capitalise(word: str, toks: list[_Tok], index: int) -> str:
    if index == 0 or toks[index - 1].text in _SENTENCE_END:
        return word[:1].upper() + word[1:]
    return word


def _number(toks: list[_Tok], np: _NP, end: int) -> bool:
    """Plural? From an auxiliary next to the subject ("How are biodegradable plastics made?"), else the head."""
    prev = toks[np.start - 1].low if np.start > 0 else ""
    following = toks[end].low if end < len(toks) else ""
    if following == "'s":  # "What are my cat's desires?": the verb agrees with "desires"
        return _is_plural(toks[np.end - 1])
    for word in (prev, following):
        if word in _SINGULAR_AUX:
            return False
        if word in _PLURAL_AUX:
            return True
    return _is_plural(toks[np.end - 1])


_OBJECT_PRONOUNS = frozenset({"them", "him", "me", "us"})
_QUOTES = frozenset({'"', "“", "”", "'", "‘", "’"})
_DETERMINER_WORDS = frozenset({"which", "whose", "the", "a", "an"})  # not "what": "what causes/VERB throat cancer"
_RELATIVES = frozenset({"that", "who", "which", "whose", "whom"})


def _superlative(tok: _Tok) -> bool:
    return tok.low in ("best", "worst", "most", "least") or (
        tok.tag == "ADJ" and tok.low.endswith("est") and len(tok.low) > 5
    )


def _standalone(toks: list[_Tok], np: _NP, end: int, hist: _History) -> bool:
    """Whether tokens np.start..end are a whole noun phrase that refers: not one conjunct of "A and B", not a
    predicate ("be considered apex predators", "work as a veterinarian"), not cut off by the tagger mid-phrase
    ("the Boeing | 777", "any super | car"), not the head of a complement a pronoun cannot take ("the
    alternatives to surgery"), not inside brackets."""
    prev = toks[np.start - 1] if np.start > 0 else None
    before = toks[np.start - 2] if np.start > 1 else None
    if end + 2 < len(toks) and toks[end].text == "(" and toks[end + 2].text == ")":
        end += 3  # "General Data Protection Regulation (GDPR) and …"
    following = toks[end] if end < len(toks) else None
    after = toks[end + 1] if end + 1 < len(toks) else None
    if prev is not None:
        if prev.low in _COORDINATION or prev.low in _PREDICATE_AFTER or prev.text in "()":
            return False
        if prev.tag == "ADJ" or prev.low in _CUT_AFTER:
            return False
        if _content(prev) and prev.tag not in ("VERB", "AUX", "ADV", "ADP", "SCONJ", "CCONJ", "PART", "INTJ"):
            return False  # a content word the tagger left out of the phrase
        if prev.tag in ("ADP", "SCONJ") and _content(prev) and prev.low not in grammar.PREPOSITIONS:
            return False  # "making almond/ADP milk": no preposition, a modifier the tagger mistook
        if prev.tag == "VERB" and prev.key in hist.nouns and not prev.low.endswith("ing"):
            return False  # "damage concrete/VERB driveways": a noun of the conversation, mis-tagged
        if prev.tag == "ADV" and before is not None and before.low in _CUT_AFTER:
            return False
        if toks[np.body].tag == "PROPN" and prev.text[:1].isupper() and before is not None and before.is_word:
            return False  # "Barron | Trump"
    if prev is not None and following is not None and prev.text == "," and following.text == ",":
        return False  # one item of a list: "(almond, oat, hemp, rice milk)"
    if prev is not None and (prev.low in _OBJECT_PRONOUNS or prev.text in _QUOTES):
        return False  # "call them funny cars" names, "the "Funny Cars"" quotes: no entity to stand in for
    if (
        prev is not None
        and prev.tag == "VERB"
        and _content(prev)
        and before is not None
        and before.low in _DETERMINER_WORDS
        and not (before.low == "which" and prev.low.endswith("s"))  # "which causes/VERB …" is a verb
    ):
        return False  # "Which vegan/VERB milk": a modifier the tagger called a verb
    if prev is not None and prev.tag == "VERB" and "-" in prev.text:
        return False  # "DNA-based/VERB testing": a compound modifier, not a verb taking an object
    if any(_superlative(toks[k]) for k in range(np.body, end)):
        return False  # "the best vegan milk" for a latte is not the one the conversation named
    if prev is not None and prev.low == "of" and following is not None and following.low.endswith("ing"):
        if following.tag in ("VERB", "NOUN"):
            return False  # "the odds of breast cancer spreading": "its odds spreading" drops the "of" it needs
    if following is not None and (following.low in _RELATIVES or following.text in _QUOTES):
        return False  # "the first car that goes fast": a pronoun takes no restrictive clause
    if following is not None:
        if following.low in _COORDINATION or following.tag in ("NOUN", "PROPN", "NUM") or following.text == ")":
            return False
        if any(c.isdigit() for c in following.text) or (following.is_word and following.key in hist.nouns):
            return False
        # A subject or predicate with a complement ("What are the alternatives to surgery?", "How do big
        # companies in the US adapt?") loses it to a pronoun; an object ("stop bees from …", "about hemp milk
        # for coffee") does not.
        preposition = following.tag == "ADP" or following.low == "to"  # "alternatives to/PART surgery"
        if preposition and after is not None and after.tag in _NP_START:
            if prev is None or prev.tag not in ("VERB", "ADP"):
                return False
    return np.det not in ("its", "their", "his", "her")  # already anaphoric


def _candidates(toks: list[_Tok], hist: _History, text: str, gender: str = "") -> list[_Candidate]:
    nps = _noun_phrases(toks)
    given = [t.is_word and (t.key in hist.latest) for t in toks]
    by_start = {np.start: np for np in nps}
    out: list[_Candidate] = []

    def recency(indexes: range) -> int:
        return max((hist.latest.get(toks[k].key, -1) for k in indexes), default=-1)

    def content(indexes: range) -> int:
        return sum(1 for k in indexes if _content(toks[k]))

    def all_given(np: _NP) -> bool:
        return all(given[k] or not _content(toks[k]) for k in range(np.body, np.end))

    def topical(k: int) -> bool:
        # A noun here that was a noun before too ("Why doesn't honey spoil?" after "Why doesn't it spoil?" has
        # no entity "spoil").
        tok = toks[k]
        noun_before = tok.key in hist.nominal or tok.tag == "PROPN"  # "orange trees": "orange" is nominal
        return tok.tag in ("NOUN", "PROPN") and tok.key not in GENERIC_NOUNS and given[k] and noun_before

    for np in nps:
        head = toks[np.end - 1]
        after = toks[np.end] if np.end < len(toks) else None
        # 1. The whole phrase, or a chain "A of/for/in/on B …", was said before: a pronoun.
        if all_given(np) and topical(np.end - 1):
            ends = [np.end]
            last = np
            while (
                last.end + 1 < len(toks)
                and toks[last.end].low in _CONNECTORS
                and (nxt := by_start.get(last.end + 1)) is not None
                and all_given(nxt)
            ):
                last = nxt
                ends.append(last.end)
            for end in ends:
                following = toks[end] if end < len(toks) else None
                if following is not None and following.low == "of":
                    continue  # "it of Salt Lake City" is not English; a longer chain may be
                if not _standalone(toks, np, end, hist):
                    continue
                # he / she only for a name without article in a conversation that already says he or she
                names = [toks[k] for k in range(np.body, np.end)]
                is_name = len(names) >= 2 and all(t.tag == "PROPN" and t.text[:1].isupper() for t in names)
                person = gender if np.det == "" and is_name else ""  # "Johnny Bench", not "Cassidy"
                if person == "?":
                    continue  # he or she? "it" would be wrong for a person
                plural = _number(toks, np, end)
                span = _render_full(toks, text, np, end, chain=end != np.end, plural=plural, gender=person)
                if span is not None:
                    words = range(np.body, end)
                    out.append(_Candidate(3, content(words), recency(words), np.start, span))
        if (after is not None and after.low == "of") or not _standalone(toks, np, np.end, hist):
            continue
        # 2. Only the head was said before, after an adjective: "a new garage door opener" → "a new one".
        k = np.end
        while k > np.body and given[k - 1] and toks[k - 1].tag in ("NOUN", "PROPN"):
            k -= 1
        countable = bool(np.det) or np.quantifier or _is_plural(head)  # "organic waste" has no "one"
        modifier = toks[k - 1] if k > np.body else None
        # A capitalised modifier is part of a name ("the Blue Lives Matter movement"), unless it is a nationality.
        plain = (
            modifier is not None
            and modifier.tag in ("ADJ", "NUM")
            and (not modifier.text[:1].isupper() or modifier.low.endswith(("ish", "an", "ese", "ian", "ic")))
        )
        if np.body < k < np.end and plain and topical(np.end - 1) and countable:  # not "the Blue one"
            word = "ones" if _is_plural(head) else "one"
            out.append(_Candidate(2, np.end - k, recency(range(k, np.end)), np.start, (toks[k].start, head.end, word)))
        # 3. A modifier was said before and the head is new: "bee habitat" → "their habitat", "the Airbus A380
        #    fuel consumption" → "its fuel consumption". Only for a proper name or a plural mention before,
        #    so "shoulder surgery" never becomes "its surgery".
        k = np.body
        while k < np.end - 1 and given[k] and toks[k].tag in ("NOUN", "PROPN", "ADJ"):
            k += 1
        prefix = range(np.body, k)
        if (
            k > np.body
            and np.det in ("", "the", "a", "an")
            and not given[np.end - 1]
            and head.tag == "NOUN"
            and _content(head)
            and any(topical(i) for i in prefix)
            and not _is_plural(toks[k - 1])
            and (
                all(toks[i].tag == "PROPN" for i in prefix)  # "the Airbus A380 fuel consumption"
                or hist.plural.get(toks[k - 1].key, False)  # "bee habitat" after "bees"
            )
            and (after is None or after.low != "'s")
            and not (np.start > 0 and toks[np.start - 1].low in ("what", "which", "whose", "of"))
        ):
            plural = hist.plural.get(toks[k - 1].key, False)
            word = _capitalise(_pronoun(plural, "possessive"), toks, np.start)
            span = (toks[np.start].start, toks[k - 1].end, word)
            out.append(_Candidate(1, content(prefix), recency(prefix), np.start, span))
    out.sort(key=lambda c: (-c.rank, -c.given, -c.recency, c.position))
    return out


def _render_full(
    toks: list[_Tok], text: str, np: _NP, end: int, *, chain: bool, plural: bool, gender: str = ""
) -> tuple[int, int, str] | None:
    """Where the entity (tokens np.start..end) goes and what replaces it, by its place in the sentence."""
    s = np.start
    first, last = toks[s], toks[end - 1]
    prev = toks[s - 1] if s > 0 else None
    following = toks[end] if end < len(toks) else None
    # "General Data Protection Regulation (GDPR)": the spelled-out acronym goes with its name.
    if following is not None and following.text == "(" and end + 2 < len(toks) and toks[end + 2].text == ")":
        if toks[end + 1].text.isupper():
            last, following = toks[end + 2], toks[end + 3] if end + 3 < len(toks) else None
    if following is not None and following.text in ("'", "’") and following.start == last.end:
        following = _Tok("'s", following.start, following.end, "PART", "")  # "Bernie Sanders' decision"
    if following is not None and following.low == "'s":  # "Salt Lake City's economy" → "its economy"
        return first.start, following.end, _capitalise(_pronoun(plural, "possessive", gender), toks, s)
    if prev is not None and prev.low == "which":  # "Which vegan milk is best?" → "Which one is best?"
        return first.start, last.end, "ones" if plural else "one"
    if prev is not None and prev.low in ("what", "whose", "how"):
        return None
    if prev is not None and prev.low == "of" and s >= 2:
        j = s - 2
        x_head = toks[j]
        while j - 1 >= 0 and toks[j - 1].tag in ("ADJ", "NOUN", "PROPN", "NUM", "CCONJ") and toks[j - 1].is_word:
            j -= 1
        x_det = toks[j - 1] if j >= 1 else None
        if x_head.tag == "NOUN" and x_head.low in KIND_NOUNS:  # "What type of orange tree" → "What type"
            return x_head.end, last.end, ""
        if x_head.tag == "NOUN" and x_det is not None and x_det.low == "the" and toks[j].tag != "CCONJ":
            words = text[toks[j].start : x_head.end]
            possessive = _capitalise(_pronoun(plural, "possessive", gender), toks, j - 1)
            return x_det.start, last.end, possessive + " " + words
        return first.start, last.end, _pronoun(plural, "object", gender)
    if (
        not chain
        and prev is not None
        and prev.low in ("in", "at")
        and toks[end - 1].tag == "PROPN"
        and not (s >= 2 and toks[s - 2].low in _NOT_A_PLACE_AFTER)
    ):
        return prev.start, last.end, "there"
    if np.quantifier:
        quant = text[first.start : toks[np.body - 1].end]
        return first.start, last.end, f"{quant} of {'them' if plural else 'it'}"
    case = "subject"
    if prev is not None and (prev.tag in ("VERB", "ADP") or prev.low in _OBJECT_AFTER) and prev.tag != "AUX":
        case = "object"
    return first.start, last.end, _capitalise(_pronoun(plural, case, gender), toks, s)


# Prepositions whose phrase a user leaves out once the conversation has named its object ("What are the
# alternatives to surgery for invasive lobular cancer?" → "What are the alternatives to surgery?").
_ELLIPSIS_AFTER = frozenset({"for", "of", "in", "on", "about", "with", "regarding"})


def _ellipses(toks: list[_Tok], hist: _History) -> list[tuple[int, int]]:
    """Character spans of a final prepositional phrase to leave out: it follows a noun, ends the text (nothing but
    punctuation after it), and every content word of its noun phrase was said before, headed by a noun that is
    not generic. Longest first (a chain "for X of Y" goes whole)."""
    spans: list[tuple[int, int]] = []
    nps = _noun_phrases(toks)
    for np in nps:
        if any(t.is_word for t in toks[np.end :]) or np.start < 2:
            continue
        words = range(np.body, np.end)
        head = toks[np.end - 1]
        if head.tag not in ("NOUN", "PROPN") or head.key in GENERIC_NOUNS:
            continue
        if not all(toks[k].key in hist.latest or not _content(toks[k]) for k in words):
            continue
        start = np.start - 1
        while True:
            prep, before = toks[start], toks[start - 1] if start > 0 else None
            if prep.low not in _ELLIPSIS_AFTER or before is None or before.tag not in ("NOUN", "PROPN"):
                break
            spans.append((toks[start - 1].end, head.end))
            # "for stage 1 of invasive lobular cancer": the phrase before may go with it when it was said too
            outer = next((n for n in nps if n.end == start), None)
            if (
                outer is None
                or outer.start < 2
                or not all(toks[k].key in hist.latest or not _content(toks[k]) for k in range(outer.body, outer.end))
            ):
                break
            start = outer.start - 1
    return sorted(spans, key=lambda sp: sp[0])


def anaphora_cr(text: str, history: Sequence[str], response: str = "") -> str:
    """Replace the entity the conversation already established with its anaphor (module docstring); the text
    unchanged when there is none or every rewrite would break a grammar rule. ``response``, the system's previous
    answer, establishes entities too, except names: a user introduces a named thing by its name ("What is the role
    of Co-Extra?" after a passage that mentions it once), a described one by a pronoun ("How deadly is it?")."""
    if not text.strip() or not (history or response):
        return text
    hist = _history(history)
    said_by_user = dict(hist.latest)
    if response:
        # The response adds what the user never said; a word the user said keeps the user's number and place
        # ("bees" stays plural after a passage that says "a bee").
        told = _history([response])
        for key in told.latest.keys() - said_by_user.keys():
            hist.latest[key] = len(history)  # the latest utterance
            hist.plural[key] = told.plural[key]
        hist.nouns |= told.nouns - said_by_user.keys()
        hist.nominal |= told.nominal - said_by_user.keys()
    toks = _analyse(text)
    _fix_tags(toks, hist)
    for cand in _candidates(toks, hist, text, _gender([*history, text])):
        start, end, word = cand.render
        if any(t.tag == "PROPN" and t.key not in said_by_user for t in toks if start <= t.start < end):
            continue
        out = text[:start] + word + text[end:]
        out = re.sub(r"\s+([?.!,;:])", r"\1", re.sub(r"\s{2,}", " ", out)).strip()
        if out != text and grammar.is_grammatical(out):
            return out
    # No anaphor fits: leave out a final phrase the conversation already named, as users do.
    for start, end in _ellipses(toks, hist):
        out = re.sub(r"\s+([?.!,;:])", r"\1", text[:start] + text[end:]).strip()
        if out != text and _has_noun(out) and grammar.is_grammatical(out):
            return out
    return text


def _has_noun(text: str) -> bool:
    return any(t.tag in ("NOUN", "PROPN") and _content(t) for t in _analyse(text))

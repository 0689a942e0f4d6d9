"""A surface grammar check for generated questions: the damage that deleting or mis-generating words leaves.

Every pipeline stage drops an output this check flags (and counts it as "ungrammatical"). It is not a parser:
each rule below catches text no person would type. Tests run it over real text: it passes every CAsT
2019–2022 utterance but six typos in those files ("the the Neverending Story") and raw turns with no content
word ("Why?"), and every curated ECAsT manual paraphrase; it flags about half of the Entity Removal baseline's
outputs on CAsT 2020. Rules, by the reason code ``problems()`` returns:

- ``no_content_word``: only function words are left ("What is it?", "What are the?"), or no word at all.
- ``determiner_without_noun``: an article or possessive determiner (the, a, an, its, their, my, your, our,
  every) followed by punctuation, the end of the text, or another function word ("What are the of?",
  "The, what is it?", "how does the - based?"). A capital "A" inside a sentence is a letter ("type A"), not
  an article.
- ``dangling_preposition``: a preposition followed by punctuation or the end when nothing can have left it
  stranded (right after a determiner, preposition, conjunction, punctuation, "the" + superlative or the
  start: "What are the best in?"); and of, between, among, than, during, versus, via, per, including, regarding,
  concerning, despite ending a clause right after a noun, a number or an adjective that takes no "of" ("What
  are the symptoms of?", "What is the main economic of?"). Stranding after a verb, a pronoun or "a symptom"
  is English ("What is it made of?", "examples to learn from?", "What could it be a symptom of?") and passes.
- ``missing_subject``: a question word + an auxiliary + nothing ("Can you tell me what are?", "How is?";
  "If not, what is?" opens its clause and is English), or why / how / where / when opening a sentence + a
  modal or "do" + be / have ("Why would be considered?").
- ``do_with_participle``: "do" / "does" / "did" opening a question (after a question word or alone) whose clause
  has no verb but -ing forms ("Why do so many bees dying?"; "How do I stop smoking?" and "What does being vegan
  mean?" have a base form and pass).
- ``do_with_be``: "do" / "does" / "did" opening a question whose clause has "be" as its verb ("How does food be
  tested?", "How does it be tested?"); "to be" ("Does it need to be sealed?") passes.
- ``missing_object``: a verb that needs its object before "from" followed directly by "from"
  ("What is the best to prevent from?", "stop from dying").
- ``double_function_word``: the same function word twice ("the the", "of of"; "that that" and "had had" are
  English), an article after an article ("a the"), or "of" followed by another preposition ("of in").
- ``dangling_conjunction``: and / or / nor / but followed by punctuation or the end ("the pros and?").
- ``stray_punctuation``: text that starts with punctuation other than a quote or bracket, or a comma,
  semicolon or colon followed by punctuation or the end (", ?").
- ``hyphen_fragment``: a word that starts or ends with a hyphen ("-based", "DNA- ").
- ``empty_brackets`` ("()", '""') and ``unbalanced_brackets`` (an opening bracket never closed or vice versa).
"""

from __future__ import annotations

import re
from functools import lru_cache

ARTICLES = frozenset({"the", "a", "an"})
POSSESSIVE_DETERMINERS = frozenset({"its", "their", "my", "your", "our"})  # his/her are also pronouns
DETERMINERS = ARTICLES | POSSESSIVE_DETERMINERS | {"every"}
PREPOSITIONS = frozenset(
    {
        "of", "in", "on", "at", "for", "to", "from", "with", "by", "about", "into", "onto", "over", "under",
        "between", "among", "amongst", "through", "during", "without", "within", "against", "toward", "towards",
        "upon", "across", "behind", "beyond", "than", "via", "per", "versus", "vs", "including", "regarding",
        "concerning", "despite", "amid", "after", "before", "since", "until", "like", "near", "around", "besides",
        "beside", "except", "unlike",
    }
)  # fmt: skip
# Prepositions that never end a clause after a noun ("the symptoms of?"), unlike "What is the tool for?".
NEVER_STRANDED_AFTER_NOUN = frozenset(
    {
        "of", "between", "among", "amongst", "than", "during", "versus", "vs", "via", "per", "including",
        "regarding", "concerning", "despite", "amid",
    }
)  # fmt: skip
AUXILIARIES = frozenset(
    {
        "is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "has", "have", "had",
        "can", "could", "will", "would", "shall", "should", "may", "might", "must",
    }
)  # fmt: skip
PRONOUNS = frozenset(
    {
        "i", "you", "he", "she", "it", "we", "they", "me", "him", "her", "us", "them", "his", "hers", "ours",
        "theirs", "mine", "yours", "itself", "themselves", "myself", "yourself", "what", "which", "who", "whom",
        "whose", "why", "how", "when", "where", "whether",
    }
)  # fmt: skip
CONJUNCTIONS = frozenset({"and", "or", "but", "nor", "if", "because", "although", "though", "while", "unless"})
OTHER_FUNCTION_WORDS = frozenset(
    {
        "this", "that", "these", "those", "some", "any", "each", "all", "both", "either", "neither", "no", "not",
        "much", "many", "more", "most", "few", "several", "such", "other", "another", "one", "ones", "there",
        "here", "so", "very", "too", "also", "just", "then", "now", "as", "than", "yes", "please", "n't", "'s",
        "'re", "'ve", "'ll", "'d", "'m", "s", "else", "ever", "even", "only", "again", "out", "up", "off",
        "down", "still",
    }
)  # fmt: skip
FUNCTION_WORDS = DETERMINERS | PREPOSITIONS | AUXILIARIES | PRONOUNS | CONJUNCTIONS | OTHER_FUNCTION_WORDS
# After a determiner these are function words only, never nouns: "the will", "the can", "the may" are nouns.
_AFTER_DETERMINER = (
    (FUNCTION_WORDS - {"will", "can", "may", "must", "might", "most", "more", "few", "other", "one", "ones"})
    - {"same", "only", "much", "many", "very", "up", "off", "down", "out", "ever", "else", "even", "still"}
    - {"all", "both", "such", "no", "yes", "here", "now", "then", "like", "near", "around", "after", "before"}
    - {"while", "though", "if", "not"}
)
# Active forms only: the passive keeps "from" next to the verb ("Are minors banned from …?").
MISSING_OBJECT_BEFORE_FROM = frozenset(
    {
        "prevent", "prevents", "preventing", "stop", "stops", "stopping", "protect", "protects", "protecting",
        "prohibit", "prohibits", "prohibiting", "ban", "bans", "banning", "discourage", "discourages",
        "discouraging", "deter", "deters", "deterring",
    }
)  # fmt: skip
# A preposition right after one of these has lost its object ("What are the of?"); particles such as "after" or
# "over" may end a clause after "like" or "up" ("What was life like after?").
_NO_OBJECT_AFTER = frozenset({"of", "to", "for", "with", "from", "in", "on", "at", "by", "into", "than"})
_PARTICLES = frozenset({"out", "up", "down", "off", "away", "back", "over", "in", "on"})
# Verbs the tagger may call nouns that take a stranded "of" ("What does it consist of?").
VERBS_WITH_OF = frozenset(
    {
        "consist", "consists", "consisted", "made", "composed", "comprised", "think", "thought", "dream",
        "dreamt", "dreamed", "die", "died", "dies", "approve", "approved", "rid", "remind", "reminded",
        "smell", "smells", "taste", "tastes", "hear", "heard", "know", "knew", "speak", "spoke", "care",
    }
)  # fmt: skip
_REPEATABLE = frozenset({"that", "had"})
# Adjectives that take a stranded "of" ("What are you afraid of?").
ADJECTIVES_WITH_OF = frozenset(
    {
        "afraid", "aware", "capable", "proud", "fond", "tired", "sick", "scared", "jealous", "full", "short",
        "ashamed", "certain", "sure", "conscious", "guilty", "independent", "free", "worthy", "envious",
        "suspicious", "careful", "critical", "supportive", "typical", "indicative", "representative", "made",
    }
)  # fmt: skip
_SUPERLATIVES = frozenset({"best", "worst", "most", "least"})
_SUBJECT_WH = frozenset({"what", "who", "which"})
_ADVERBIAL_WH = frozenset({"why", "how", "where", "when"})
_DO = frozenset({"do", "does", "did"})
_CLAUSE_START = frozenset({".", "?", "!", ",", ";", ":"})
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")
TOKEN = re.compile(
    r"[A-Za-z0-9]+(?=n['’]t\b)|n['’]t\b|['’](?:s|re|ve|ll|d|m)\b"
    r"|[#$£€@]?[A-Za-z0-9]+(?:[-–.][A-Za-z0-9]+)*[-–]?|[-–][A-Za-z0-9]+|\S"
)
_SENTENCE_END = frozenset(".?!")
_QUOTES = frozenset("\"'“”‘’«»")


def tokenize(text: str) -> list[str]:
    """Words (hyphenated words whole, clitics such as n't and 's apart) and single punctuation marks."""
    return TOKEN.findall(text)


def _is_word(token: str) -> bool:
    return any(c.isalnum() for c in token)


def _function_word(token: str) -> bool:
    # An upper-case word of two or more letters is an acronym ("US", "IT"), never the pronoun or auxiliary.
    return _low(token) in FUNCTION_WORDS and not (token.isupper() and len(token) > 1)


def _low(token: str) -> str:
    return token.lower().replace("’", "'")


@lru_cache(maxsize=4096)
def _tags(tokens: tuple[str, ...]) -> tuple[str, ...]:
    from ecast.pipeline.rules import pos_tag

    return tuple(pos_tag(list(tokens)))


def _is_article_here(tokens: list[str], i: int) -> bool:
    low = _low(tokens[i])
    if low not in DETERMINERS:
        return False
    if tokens[i] == "A" and i > 0 and tokens[i - 1] not in _SENTENCE_END:  # "type A", "vitamin A"
        return False
    return not (tokens[i].isupper() and len(tokens[i]) > 1)  # "THE" in an acronym-only text is rare; "AN" is not


def _missing_subject(tokens: list[str], i: int, *, opens: bool) -> bool:
    """A question word at ``tokens[i]`` whose auxiliary has no subject after it: "How is?", "tell me what are?"
    anywhere; "Why would be considered?" when the word opens the sentence (lexical only: the tagger is not
    reliable enough here)."""
    j = i + 1
    if j >= len(tokens) or _low(tokens[j]) not in AUXILIARIES:
        return False
    aux = _low(tokens[j])
    j += 1
    if j < len(tokens) and _low(tokens[j]) in ("n't", "not"):
        j += 1
    nxt = _low(tokens[j]) if j < len(tokens) else None
    if nxt is None or nxt in _SENTENCE_END:  # "If not, what is?" is elliptical English; "How is?" is not
        elliptical = opens and _low(tokens[i]) in _SUBJECT_WH and aux in ("is", "are", "was", "were", "am")
        return not elliptical
    if not opens:
        return False
    # "Why would be considered?": a modal or "do" straight before "be" / "have" (not "What can be done?",
    # whose wh-word is the subject).
    return _low(tokens[i]) in _ADVERBIAL_WH and aux not in ("is", "are", "was", "were", "am") and nxt in ("be", "have")


_DO = frozenset({"do", "does", "did", "don't", "doesn't", "didn't"})
# Words in -ing that are nouns or adjectives a "do" question may end with ("Do they have a ceiling?").
_NOT_PARTICIPLES = frozenset(
    {"thing", "something", "anything", "nothing", "everything", "ceiling", "evening", "morning", "spring", "string",
     "king", "ring", "wing", "sibling", "pudding", "building", "wedding", "clothing", "housing", "funding",
     "training", "meaning", "painting", "feeling", "beginning", "ending", "setting", "lightning", "during"}
)  # fmt: skip


# What may stand between "do" and its subject's head: quantifiers, determiners, "of" + an object pronoun.
_DO_FILLERS = frozenset(
    {"so", "too", "very", "many", "much", "few", "most", "some", "all", "both", "these", "those", "the", "a",
     "an", "of", "them", "us", "my", "your", "our", "their", "its", "his", "her", "n't", "not", "still", "really"}
)  # fmt: skip
_SUBJECT_PRONOUNS = frozenset({"i", "you", "we", "they", "he", "she", "it"})


def _do_with_participle(tokens: list[str], i: int) -> bool:
    """``tokens[i]`` is "do" opening a question whose clause is "do" + at most a subject noun + an -ing form ending
    it: "Why do so many bees dying?". Read from the words (the tagger often calls the -ing form a noun): a subject
    pronoun ("Do you like swimming?") or two content words ("Why do smokers have difficulty quitting?") leave room
    for a verb, and pass."""
    end = i + 1
    while end < len(tokens) and tokens[end] not in _SENTENCE_END and tokens[end] not in ",;:":
        end += 1
    last = _low(tokens[end - 1]) if end - 1 > i else ""
    if len(last) < 5 or not last.endswith("ing") or last in _NOT_PARTICIPLES:
        return False
    between = [_low(t) for t in tokens[i + 1 : end - 1]]
    if any(w in _SUBJECT_PRONOUNS for w in between):
        return False
    return sum(1 for w in between if w not in _DO_FILLERS) <= 1


def _do_with_be(tokens: list[str], i: int) -> bool:
    """``tokens[i]`` is "do" opening a question whose clause (to its end) has a bare "be" not after "to"."""
    for j in range(i + 1, len(tokens)):
        if tokens[j] in _SENTENCE_END or tokens[j] in ",;:" or _low(tokens[j]) in _CLAUSE_OPENERS:
            return False  # "Do you think depression can be …": "be" belongs to the clause inside
        if _low(tokens[j]) == "be" and _low(tokens[j - 1]) not in _BEFORE_BE:
            return True
    return False


_CLAUSE_OPENERS = frozenset({"that", "if", "whether", "when", "because", "which", "who", "where", "while"})
_BEFORE_BE = frozenset(
    {"to", "not", "n't", "ever", "also", "always", "can", "could", "should", "would", "will", "must", "might", "may"}
)


def problems(text: str) -> list[str]:
    """The reason codes (module docstring) of every rule the text breaks; empty when it passes."""
    found: list[str] = []

    def flag(code: str) -> None:
        if code not in found:
            found.append(code)

    tokens = tokenize(text.strip())
    words = [t for t in tokens if _is_word(t)]
    if not words or all(_function_word(w) or not any(c.isalpha() for c in w) for w in words):
        flag("no_content_word")
    if re.search(r"\(\s*\)|\[\s*\]|\{\s*\}|\"\s*\"|“\s*”", text):
        flag("empty_brackets")
    depth = 0
    for ch in text:
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth < 0:
                break
    if depth != 0:
        flag("unbalanced_brackets")
    if tokens and not _is_word(tokens[0]) and tokens[0] not in _QUOTES | _OPEN | {"¿", "¡"}:
        flag("stray_punctuation")
    n = len(tokens)
    for i, tok in enumerate(tokens):
        low = _low(tok)
        nxt = tokens[i + 1] if i + 1 < n else None
        nxt_low = _low(nxt) if nxt is not None else None
        prev = tokens[i - 1] if i > 0 else None
        prev_low = _low(prev) if prev is not None else None
        suspended = nxt_low in ("and", "or", "to")  # "short- and long-term"
        if _is_word(tok) and (tok.startswith(("-", "–")) or (tok.endswith(("-", "–")) and not suspended)):
            flag("hyphen_fragment")
        if tok in ",;:" and (nxt is None or (not _is_word(nxt) and nxt not in _QUOTES and nxt not in _OPEN)):
            flag("stray_punctuation")
        if not _is_word(tok):
            continue
        abbreviation = nxt == "." and i + 2 < n and _is_word(tokens[i + 2])  # "vs. an RN salary"
        ends_clause = nxt is None or (not _is_word(nxt) and not abbreviation)
        if _is_article_here(tokens, i):
            if ends_clause and nxt not in _QUOTES and nxt not in _OPEN:
                flag("determiner_without_noun")
            elif nxt is not None and nxt.islower() and nxt_low in _AFTER_DETERMINER:
                flag("determiner_without_noun")
        if low in PREPOSITIONS and ends_clause and nxt not in _QUOTES and nxt not in _OPEN:
            the_best = prev_low in _SUPERLATIVES and i >= 2 and _low(tokens[i - 2]) == "the"  # "the best in?"
            if prev is None or prev_low in DETERMINERS | _NO_OBJECT_AFTER | CONJUNCTIONS or the_best:
                flag("dangling_preposition")
            elif not _is_word(prev):
                if prev not in _QUOTES and prev not in _CLOSE:  # a quoted title is a noun phrase
                    flag("dangling_preposition")
            elif low in NEVER_STRANDED_AFTER_NOUN and prev_low not in VERBS_WITH_OF | ADJECTIVES_WITH_OF:
                tags = _tags(tuple(tokens))
                # "What could it be a symptom of?" is English; "What are the symptoms of?" is not.
                after_a = i >= 2 and _low(tokens[i - 2]) in ("a", "an")
                if tags[i - 1] in ("NOUN", "PROPN", "NUM", "DET", "ADJ") and not after_a:
                    flag("dangling_preposition")
        if low in _SUBJECT_WH | _ADVERBIAL_WH and _missing_subject(tokens, i, opens=i == 0 or prev in _CLAUSE_START):
            flag("missing_subject")
        if low in _DO and (prev is None or prev in _CLAUSE_START or prev_low in _SUBJECT_WH | _ADVERBIAL_WH):
            if _do_with_participle(tokens, i):
                flag("do_with_participle")
            if _do_with_be(tokens, i):
                flag("do_with_be")
        if low == "from" and prev_low in MISSING_OBJECT_BEFORE_FROM:
            flag("missing_object")
        if nxt is not None and _is_word(nxt):
            if low == nxt_low and low in FUNCTION_WORDS and low not in _REPEATABLE and prev_low not in _PARTICLES:
                flag("double_function_word")  # "miss out on on the coast" is English
            elif low in ARTICLES and nxt_low in ARTICLES and _is_article_here(tokens, i + 1):
                flag("double_function_word")
            elif low == "of" and nxt_low in _NO_OBJECT_AFTER and prev_low not in VERBS_WITH_OF:
                if prev is None or _tags(tuple(tokens))[i - 1] in ("NOUN", "PROPN", "DET", "NUM", "ADP"):
                    flag("double_function_word")  # "the symptoms of in", not "think of to cow's milk"
        if low in ("and", "or", "nor", "but") and (nxt is None or nxt in _SENTENCE_END):
            flag("dangling_conjunction")
    return found


def is_grammatical(text: str) -> bool:
    """True when no rule of this module flags the text."""
    return not problems(text)

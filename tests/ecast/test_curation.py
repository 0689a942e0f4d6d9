"""Repeated n-grams across a turn's paraphrases (ecast/curation.py), with hand-checked expectations."""

import pytest

from ecast.curation import highlight, repeated_ngrams, self_bleu, tokenize


def test_it_finds_expressions_shared_by_two_paraphrases_and_ignores_stopwords():
    texts = [
        "What is the cost of living in Seattle?",
        "How high is the cost of living in Seattle?",
        "Is Seattle an expensive city?",
    ]
    grams = repeated_ngrams(texts)
    # "cost of living" is in two texts; its parts "cost", "living" are subsumed (same count); "of", "in", "the"
    # are stopwords and never counted alone; "seattle" appears in all three.
    assert grams[("seattle",)] == 3
    assert grams[("cost", "of", "living")] == 2
    assert ("cost",) not in grams and ("living",) not in grams
    assert all(g[0] not in {"the", "of", "in", "is"} and g[-1] not in {"the", "of", "in", "is"} for g in grams)


def test_a_word_repeated_inside_one_paraphrase_is_not_repeated_across_paraphrases():
    assert repeated_ngrams(["bees bees bees", "wasps"]) == {}


def test_it_counts_case_and_apostrophes_alike():
    assert repeated_ngrams(["Garage door’s opener", "garage door's OPENER"]) == {("garage", "door's", "opener"): 2}


def test_it_marks_repeated_expressions_as_whole_spans_and_escapes_html():
    html = highlight("Is <b>throat cancer</b> curable?", [("throat", "cancer")])
    assert html == 'Is &lt;b&gt;<mark class="repeat">throat cancer</mark>&lt;/b&gt; curable?'


def test_adjacent_repeated_grams_merge_into_one_mark():
    assert highlight("red apple pie", [("red",), ("apple", "pie")]) == '<mark class="repeat">red apple pie</mark>'


def test_tokens_keep_their_offsets():
    tokens = tokenize("Why, bees?")
    assert [(t.norm, t.start, t.end) for t in tokens] == [("why", 0, 3), ("bees", 5, 9)]


def test_self_bleu_is_100_for_identical_texts_low_for_unrelated_ones_and_none_for_one():
    assert self_bleu(["What is throat cancer?", "What is throat cancer?"]) == pytest.approx(100.0)
    assert self_bleu(["What is throat cancer?", "How do bees make honey today?"]) < 10
    assert self_bleu(["alone"]) is None

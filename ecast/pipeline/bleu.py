"""BLEU as ECAsT reports it (Tables 9 and 10): sacrebleu corpus BLEU, 13a tokenizer, no smoothing, 0-100."""

from __future__ import annotations

from collections.abc import Sequence

from ecast.core.errors import DomainError

# ECAsT Table 9 (Al-Thani, Jansen & Elsayed 2023): context-removal BLEU against the raw turns, per CAsT year; pages
# and benches print it beside the app's figures. 2020's "Original manual" is reproduced exactly (44.72 over every turn).
# 2021's 44.92 is not: m_i against u_i over the manual topics file's 239 turns is 55.13, over turns >= 2 49.92, over
# the 158 judged turns 56.26, and the organisers' rewrites score 53.76; the paper does not say which turns or file it
# used, so pages show both figures side by side and never adjust ours.
PAPER_TABLE9: dict[int, dict[str, float]] = {
    2020: {"Original manual": 44.72, "Rewrite": 56.57, "Entity removal": 30.16, "T5-CR": 53.70},
    2021: {"Original manual": 44.92, "Rewrite": 56.01, "Entity removal": 34.09, "T5-CR": 51.85},
}
PAPER_TABLE10_PARA_AUTO = 32.06  # ECAsT Table 10: BLEU of the automatic paraphrases against their sources


class BleuError(DomainError, ValueError):
    """BLEU refused its input (hypotheses and references differ in number)."""


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float | None:
    """Corpus BLEU of hypotheses against one reference each; None for an empty corpus."""
    import sacrebleu

    if len(hypotheses) != len(references):
        raise BleuError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        return None
    bleu = sacrebleu.metrics.BLEU(tokenize="13a", smooth_method="none")
    return float(bleu.corpus_score(list(hypotheses), [list(references)]).score)


def sentence_bleu(hypothesis: str, reference: str) -> float:
    """Sentence BLEU with the same settings (used only for per-item display, never for the tables)."""
    import sacrebleu

    bleu = sacrebleu.metrics.BLEU(tokenize="13a", smooth_method="none", effective_order=True)
    return float(bleu.sentence_score(hypothesis, [reference]).score)

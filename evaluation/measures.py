"""Which ir_measures strings the product can store, and the picker's list of them (no Django here).

A measure is stored per turn, so it must be one pytrec_eval (trec_eval's C code) computes per query, or Judged@k,
which the product computes from each ranking's top (``evaluation.metrics``). Measures of other ir_measures providers
(ERR from gdeval, alpha-nDCG from ndeval, …) need subtopic qrels or give no per-query value the product can keep
current, so they are refused by name rather than stored as zeros.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import ir_measures
from ir_measures import providers

from evaluation.metrics import DEFAULT_MEASURES, MeasureError, canonical_name, parse_measure

__all__ = ["MeasureError", "measure_check", "measure_registry"]

# How a parameter is written in an ir_measures string, for the picker's hints.
_PARAM_SYNTAX = {"cutoff": "@k", "recall": "@r"}


def _computable(parsed: Any) -> bool:
    if parsed.NAME == "Judged":
        return True
    try:
        return bool(providers.registry["pytrec_eval"].supports(parsed))
    except (AssertionError, ValueError, TypeError):  # a parameter value ir_measures itself rejects
        return False


def measure_check(measure: str) -> str:
    """The stored spelling of ``measure`` (``ndcg@100`` → ``nDCG@100``); ``MeasureError`` naming it when ir_measures
    cannot parse it or pytrec_eval cannot compute it per turn."""
    text = (measure or "").strip()
    if not text:
        raise MeasureError("measure: empty; give an ir_measures string such as nDCG@10 or P(rel=2)@5")
    try:
        name = canonical_name(text)
        parsed = parse_measure(text)
    except MeasureError:
        raise
    except Exception as exc:  # noqa: BLE001 - ir_measures raises assorted types for a malformed string
        raise MeasureError(f"unknown measure {text!r}: {exc}") from exc
    if not _computable(parsed):
        raise MeasureError(
            f"measure {text!r}: ir_measures knows it, but pytrec_eval cannot compute it per turn "
            "(stored measures are trec_eval's: nDCG, AP, P, R, RR, Rprec, Bpref, infAP, Set*, Num*, IPrec, Success, "
            "and Judged)"
        )
    return name


def _parsed_or_none(text: str) -> Any:
    try:
        return ir_measures.parse_measure(text)
    except Exception:  # noqa: BLE001 - a registry name that does not parse alone is not offered
        return None


@cache
def measure_registry() -> list[tuple[str, str]]:
    """(example string, hint) for every ir_measures measure the product can store: the default measures first,
    then one entry per registry name, with the parameters it takes and what each means."""
    out: list[tuple[str, str]] = [(m, "stored for every run") for m in DEFAULT_MEASURES]
    seen = set(DEFAULT_MEASURES)
    for name, measure in sorted(ir_measures.measures.registry.items(), key=lambda kv: kv[0].lower()):
        params = measure.SUPPORTED_PARAMS
        example = f"{name}@10" if "cutoff" in params else f"{name}@0.1" if "recall" in params else name
        parsed = _parsed_or_none(example)
        if parsed is None or not _computable(parsed) or example in seen:
            continue
        seen.add(example)
        hints = [
            f"{_PARAM_SYNTAX.get(p, f'({p}=…)')}: {info.desc}" for p, info in params.items() if info.desc is not None
        ]
        out.append((example, "; ".join(hints) or "no parameters"))
    return out

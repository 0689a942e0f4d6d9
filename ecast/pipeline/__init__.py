"""The paraphrase-generation pipeline (ECAsT): plain-Python modules, no Django imports."""

from ecast.pipeline.cqr import cqr_rewrite

__all__ = ["cqr_rewrite"]

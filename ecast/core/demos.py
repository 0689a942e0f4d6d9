"""The parts of ``manage.py load_demo`` after the demo collection: every feature registers its own demo module (ecast
never imports the apps above it, so judging and evaluation register theirs from their ``AppConfig.ready()``).

A part is a module with an idempotent ``load(stdout=...)``, named by its dotted path and imported only when the demo
loads. Parts load stage by stage, in the order of the product's data flow, so each finds what the earlier stages
made; within a stage, in the order they were registered (INSTALLED_APPS order, then each app's own order).
"""

from __future__ import annotations

from dataclasses import dataclass

from ecast.core.errors import DomainError

# paraphrases: test sets and rating campaigns over the collection's paraphrases; runs: retrieval runs (of the test
# sets too); judgments: pools of those runs and the qrels versions they derive; scores: every run under every
# version; analyses: what reads the scores; other collections: demos of collections of their own.
STAGES = ("paraphrases", "runs", "judgments", "scores", "analyses", "other collections")


class DemoPartError(DomainError, ValueError):
    """A demo part registered under a stage the demo does not have."""


@dataclass(frozen=True)
class DemoPart:
    """One feature's demo: the dotted path of a module with an idempotent ``load(stdout=...)``, and its stage."""

    module: str
    stage: str


_PARTS: dict[str, DemoPart] = {}


def demo_part_register(*, module: str, stage: str) -> None:
    """Add (or replace, by ``module``) a feature's demo part."""
    if stage not in STAGES:
        raise DemoPartError(f"stage: must be one of {', '.join(STAGES)}, got {stage!r}")
    _PARTS[module] = DemoPart(module=module, stage=stage)


def demo_parts() -> list[DemoPart]:
    """Every registered part in loading order: by stage, then in registration order."""
    return sorted(_PARTS.values(), key=lambda part: STAGES.index(part.stage))

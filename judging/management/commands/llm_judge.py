"""`manage.py llm_judge --collection NAME --qrels-version NAME [--model smollm|PATH]`: label a human qrels
version's judged pairs with text by a local model, in this process (as the worker would), then print the agreement
report of the "llm: <model>" version against it: κ with its interval, confusion matrix, per-grade precision/recall,
and Kendall's τ between the run rankings with the swapped pairs."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from ecast.core import jobs
from ecast.models import Collection
from evaluation import services as eval_services
from evaluation.agreement import selectors as asel
from evaluation.models import QrelsVersion
from judging.llm import judge, services


def fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


class Command(BaseCommand):
    help = "Run an LLM pre-judgment job inline and print its agreement with the human version."

    def add_arguments(self, parser):
        parser.add_argument("--collection", required=True)
        parser.add_argument("--qrels-version", required=True, help="The human qrels version (name)")
        parser.add_argument(
            "--model",
            default=judge.DEFAULT_MODEL,
            help="'smollm', a model folder or a .gguf file, or 'openai' (ECAST_OPENAI_BASE_URL and ECAST_OPENAI_MODEL)",
        )
        parser.add_argument("--batch-size", type=int, default=16)
        parser.add_argument("--limit", type=int, default=None, help="Label only the first N pairs")
        parser.add_argument("--measure", default="nDCG@3", help="Measure the run rankings are compared by")

    def handle(self, *args: Any, **opts: Any) -> None:
        collection = Collection.objects.filter(name=opts["collection"]).first()
        if collection is None:
            raise CommandError(f"unknown collection {opts['collection']!r}")
        version = QrelsVersion.objects.filter(collection=collection, name=opts["qrels_version"]).first()
        if version is None:
            raise CommandError(f"collection {collection.name!r} has no qrels version {opts['qrels_version']!r}")
        try:
            job = services.llm_judge_job_create(
                collection=collection,
                source_version=version,
                model=opts["model"],
                params={"batch_size": opts["batch_size"]},
                limit=opts["limit"],
                queue=False,
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stdout.write(f"job {job.pk}: {job.progress_total} pairs of {version.name!r} → {job.target_version}")
        jobs.job_unit(services.KIND, job.pk, lambda: services.llm_judge_run(job_id=job.pk), claim=True)
        job.refresh_from_db()
        if job.status != job.Status.SUCCEEDED:
            raise CommandError(f"job {job.pk} {job.status}: {job.error}")
        self.stdout.write(
            f"labelled {job.progress_done} pairs in {job.seconds:.1f} s of model time: "
            f"{job.progress_done / job.seconds:.2f} pairs/s"
        )
        llm = job.target_version
        assert llm is not None
        for v in (version, llm):
            eval_services.scores_compute_for_version(version=v, measures=[opts["measure"]])
        self.report(asel.agreement_report(a=version, b=llm, measure=opts["measure"]))

    def report(self, r: dict[str, Any]) -> None:
        k = r["kappa"]
        w = self.stdout.write
        w(f"A = {r['a']['name']}, B = {r['b']['name']}: {r['items']} pairs judged by both")
        if k["value"] is None:
            w(f"Cohen's κ ({k['weights'] or 'unweighted'}) undefined: {k['why_undefined']}; "
              f"exact agreement {fmt(r['exact'])}")  # fmt: skip
        else:
            w(f"Cohen's κ ({k['weights'] or 'unweighted'}) = {fmt(k['value'])}  95% CI [{fmt(k['low'])}, "
              f"{fmt(k['high'])}]; exact agreement {fmt(r['exact'])}")  # fmt: skip
        b = r["binary"]
        w(f"binarised at ≥ {b['threshold']}: κ = {fmt(b['kappa']['value'])}, relevant A {b['relevant_a']}, "
          f"B {b['relevant_b']}, both {b['relevant_both']}")  # fmt: skip
        w("confusion (rows A, columns B): " + " | ".join(" ".join(f"{c:4d}" for c in row) for row in r["confusion"]))
        for g in r["per_grade"]:
            w(f"  grade {g['grade']}: precision {fmt(g['precision'])} recall {fmt(g['recall'])} "
              f"(A {g['in_a']}, B {g['in_b']})")  # fmt: skip
        rk = r["ranking"]
        shared = f"over the {rk['shared_turns']} turn(s) both judged (A {rk['turns_a']}, B {rk['turns_b']})"
        if rk["tau"] is None:
            w(f"Kendall τ-b of the runs by {rk['measure']} {shared}: undefined: {rk['why_undefined']}")
        else:
            w(f"Kendall τ-b of the {rk['n']} runs by {rk['measure']} {shared}: {fmt(rk['tau'])} "
              f"(p = {fmt(rk['pvalue'])}); {len(rk['swapped'])} swapped pairs")  # fmt: skip
        for s in rk["swapped"]:
            w(f"  {s['x']} > {s['y']} under A ({s['a_x']:.4f} vs {s['a_y']:.4f}), "
              f"< under B ({s['b_x']:.4f} vs {s['b_y']:.4f})")  # fmt: skip

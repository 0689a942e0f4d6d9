"""Create a generation job from the command line; run it in the worker (default) or synchronously (--sync)."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from ecast.core import jobs
from ecast.core.rest import validation_payload
from ecast.generation import processing, selectors, services
from ecast.models import Collection
from ecast.pipeline.run import DEFAULT_CONFIG


class Command(BaseCommand):
    help = "Generate paraphrases for a collection (or some conversations/turns) with chosen backends."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("collection", help="collection name")
        parser.add_argument("--conversations", nargs="*", default=[], help="topic ids")
        parser.add_argument("--turns", nargs="*", default=[], help="turn ids such as 81_2")
        # Defaults are the pipeline's, so the command and the web form generate the same thing.
        parser.add_argument("--cqr", default=DEFAULT_CONFIG["cqr"]["backend"])
        parser.add_argument("--paraphrase", default=DEFAULT_CONFIG["paraphrase"]["backend"])
        parser.add_argument("--cr", default=DEFAULT_CONFIG["cr"]["backend"])
        parser.add_argument("--cqr-model", default="")
        parser.add_argument("--paraphrase-model", default="")
        parser.add_argument("--cr-model", default="")
        parser.add_argument("--revision", default="", help="hub revision for every t5 stage")
        parser.add_argument(
            "-n",
            "--num-return-sequences",
            type=int,
            default=DEFAULT_CONFIG["paraphrase"]["params"]["num_return_sequences"],
            help="samples per source; the ranking keeps the best --keep of a turn (default %(default)s)",
        )
        parser.add_argument("--top-k", type=int, default=50)
        parser.add_argument("--top-p", type=float, default=0.95)
        parser.add_argument("--max-new-tokens", type=int, default=40)
        parser.add_argument(
            "--min-similarity",
            type=float,
            default=DEFAULT_CONFIG["clean"]["min_similarity"],
            help="MiniLM cosine floor to the source (default %(default)s)",
        )
        parser.add_argument("--no-similarity-floor", action="store_true", help="keep outputs however far they drift")
        parser.add_argument(
            "--keep",
            type=int,
            default=DEFAULT_CONFIG["clean"]["keep"],
            help="paraphrases of a turn the ranking keeps; 0 keeps all (default %(default)s)",
        )
        parser.add_argument(
            "--no-meaning-checks", action="store_true", help="keep echoes, statements, polarity flips, lost entities"
        )
        parser.add_argument("--sources", nargs="+", default=["r", "m"], choices=["r", "m"])
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--chunk-size", type=int, default=10)
        parser.add_argument("--sync", action="store_true", help="run here instead of queueing for the worker")
        parser.add_argument("--config", default="", help="full JSON config (overrides the stage options)")

    def handle(self, *args: Any, **o: Any) -> None:
        try:
            collection = Collection.objects.get(name=o["collection"])
        except Collection.DoesNotExist as exc:
            raise CommandError(f"no collection named {o['collection']!r}") from exc

        def stage(name: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
            params: dict[str, Any] = {"max_new_tokens": o["max_new_tokens"], **(extra or {})}
            if o[f"{name}_model"]:
                params["model"] = o[f"{name}_model"]
                if o["revision"]:
                    params["revision"] = o["revision"]
            return {"backend": o[name], "params": params}

        config = (
            json.loads(o["config"])
            if o["config"]
            else {
                "cqr": stage("cqr"),
                "paraphrase": {
                    **stage(
                        "paraphrase",
                        {"num_return_sequences": o["num_return_sequences"], "top_k": o["top_k"], "top_p": o["top_p"]},
                    ),
                    "sources": o["sources"],
                },
                "cr": stage("cr"),
                "clean": {
                    "min_similarity": None if o["no_similarity_floor"] else o["min_similarity"],
                    "keep": o["keep"] or None,
                    "meaning_checks": not o["no_meaning_checks"],
                },
            }
        )
        try:
            job = services.generation_job_create(
                collection=collection,
                config=config,
                selection={"conversations": o["conversations"], "turns": o["turns"]},
                seed=o["seed"],
                chunk_size=o["chunk_size"],
            )
        except ValidationError as exc:
            raise CommandError(validation_payload(exc)["detail"]) from exc
        if not o["sync"]:
            services.generation_job_start(job=job)
            self.stdout.write(
                f"Queued job {job.pk} ({job.progress_total} turns); follow it at /generation/jobs/{job.pk}/"
            )
            return
        with jobs.heartbeat(services.KIND, job.pk):  # beating, so the sweeper never re-queues it to a worker
            services.generation_job_begin(job_id=job.pk)
            for chunk in services.generation_job_chunks(job=job):
                processing.generation_chunk_process(job_id=job.pk, gen_turn_ids=chunk)
                p = selectors.generation_job_progress(job=job)
                self.stdout.write(f"{p['done'] + p['failed']}/{p['total']} turns, {p['paraphrase_pairs']} pairs")
            processing.generation_job_finish_if_complete(job_id=job.pk)
        job.refresh_from_db()
        self.stdout.write(self.style.SUCCESS(f"Job {job.pk}: {job.status_label}"))

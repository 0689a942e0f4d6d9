from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evaluation"

    def ready(self) -> None:
        # Importing the receivers needs the models, so it waits for ready().
        from ecast.core.demos import demo_part_register
        from evaluation import dashboard, importers, recompute

        recompute.connect()
        importers.register()
        dashboard.register()
        # ``manage.py load_demo``'s parts of evaluation: the robustness demo runs the built-in BM25 over the demo
        # corpus for the originals and every paraphrase test set; then every run is scored under every version, and
        # the analyses read those scores.
        demo_part_register(module="evaluation.robustness.demo", stage="runs")
        demo_part_register(module="evaluation.demo", stage="scores")
        demo_part_register(module="evaluation.permutations.demo", stage="analyses")
        demo_part_register(module="evaluation.analyses.demo", stage="analyses")

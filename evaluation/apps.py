from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evaluation"

    def ready(self) -> None:
        import evaluation.analyses.tasks  # noqa: F401 - connects the analyses' debounced recompute
        import evaluation.tasks  # noqa: F401 - stored scores: registers the recompute tasks
        from evaluation.permutations import tasks as permutation_tasks  # noqa: F401 - connects the permutation rescore receiver
        from evaluation.recompute import connect as connect_score_receivers

        connect_score_receivers()  # stored scores: live recompute on judgments, evaluation of new runs

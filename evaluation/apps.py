from django.apps import AppConfig


class EvaluationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evaluation"

    def ready(self) -> None:
        # Importing the receivers needs the models, so it waits for ready().
        from evaluation import dashboard, importers, recompute

        recompute.connect()
        importers.register()
        dashboard.register()

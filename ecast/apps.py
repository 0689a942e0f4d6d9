from importlib import import_module

from django.apps import AppConfig


class EcastConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "ecast"
    verbose_name = "Datasets"

    def ready(self) -> None:
        # Bind shared tasks to the project's Celery app and register every task by name in this process too, so
        # services can enqueue by name (ecast.jobs) without importing the tasks modules that import them.
        from ecast.celery import TASK_PACKAGES, app

        app.set_default()
        for package in TASK_PACKAGES:
            import_module(f"{package}.tasks")
        from ecast import dashboard

        dashboard.register_ecast_sources()

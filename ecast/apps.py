from django.apps import AppConfig


class EcastConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "ecast"
    verbose_name = "Datasets"

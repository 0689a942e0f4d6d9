from django.apps import AppConfig


class JudgingConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "judging"

    def ready(self) -> None:
        # The dashboard lists open campaigns and pools; ecast cannot import judging, so judging registers them.
        from judging import dashboard

        dashboard.register()

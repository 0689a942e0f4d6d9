from importlib import import_module
from typing import Any

from django.apps import AppConfig


class EcastConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "ecast"
    verbose_name = "Datasets"

    def ready(self) -> None:
        # Bind shared tasks to the project's Celery app and register every task by name in this process too, so
        # services can enqueue by name (ecast.core.jobs) without importing the tasks modules that import them.
        from ecast.celery import TASK_PACKAGES, app

        app.set_default()
        for package in TASK_PACKAGES:
            import_module(f"{package}.tasks")
        from ecast import dashboard
        from ecast.core.demos import demo_part_register

        dashboard.register_ecast_sources()
        # The generation demo draws the paraphrase test sets that the other features' demos run and judge.
        demo_part_register(module="ecast.generation.demo", stage="paraphrases")
        _forget_tokens_on_change()
        # The adapter backend reads trained adapters from the database, so any worker can load any of them.
        from ecast.generation.finetune import adapter_stored
        from ecast.pipeline import lora

        lora.register_source(adapter_stored)


def _forget_tokens_on_change() -> None:
    """Cached API-token look-ups (ecast.core.auth) are dropped whenever what they hold changes."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete
    from rest_framework.authtoken.models import Token

    from ecast.core.auth import token_cache_forget

    user_model = get_user_model()

    def token_changed(sender: Any, instance: Any, **kwargs: Any) -> None:
        if not kwargs.get("created"):  # a new key cannot be cached yet
            token_cache_forget(keys=[instance.key])

    def user_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
        # Logging in saves only last_login, which no cached look-up holds (and it must work while Redis is down).
        if kwargs.get("update_fields") != frozenset({"last_login"}):
            token_cache_forget(user_ids=[instance.pk])

    def groups_changed(sender: Any, instance: Any, action: str, reverse: bool, pk_set: Any, **kwargs: Any) -> None:
        if action not in ("post_add", "post_remove", "post_clear", "pre_clear"):
            return
        if not reverse:
            token_cache_forget(user_ids=[instance.pk])
        elif pk_set:
            token_cache_forget(user_ids=pk_set)
        else:  # a group cleared of its users
            token_cache_forget(user_ids=list(instance.user_set.values_list("pk", flat=True)))

    def group_changed(sender: Any, instance: Any, **kwargs: Any) -> None:
        # A role is a group's name: renaming or deleting the group changes its members' roles (deleting removes the
        # memberships without an m2m_changed signal, so the members are read before the delete).
        token_cache_forget(user_ids=list(instance.user_set.values_list("pk", flat=True)))

    post_save.connect(group_changed, sender=Group, dispatch_uid="ecast-group-saved")
    pre_delete.connect(group_changed, sender=Group, dispatch_uid="ecast-group-deleted")
    post_save.connect(token_changed, sender=Token, dispatch_uid="ecast-token-saved")
    post_delete.connect(token_changed, sender=Token, dispatch_uid="ecast-token-deleted")
    post_save.connect(user_saved, sender=user_model, dispatch_uid="ecast-user-saved")
    post_delete.connect(user_saved, sender=user_model, dispatch_uid="ecast-user-deleted")
    m2m_changed.connect(groups_changed, sender=user_model.groups.through, dispatch_uid="ecast-user-groups")

from typing import Any

from django.apps import AppConfig


class JudgingConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "judging"

    def ready(self) -> None:
        # The dashboard lists open campaigns and pools; ecast cannot import judging, so judging registers them.
        from judging import dashboard

        dashboard.register()
        _forget_cached_campaigns_on_change()
        _register_demo_parts()


def _register_demo_parts() -> None:
    """``manage.py load_demo``'s parts of judging (ecast.core.demos)."""
    from ecast.core.demos import demo_part_register

    demo_part_register(module="judging.rating.demo", stage="paraphrases")
    # The relevance demo pools the BM25 runs the robustness demo made (stage "runs"), and its derived version is
    # scored with the others (stage "scores").
    demo_part_register(module="judging.relevance.demo", stage="judgments")
    # Baseline answers over the demo corpus and a written nugget bank: responses an assessor can judge.
    demo_part_register(module="judging.llm.response_demo", stage="judgments")
    demo_part_register(module="judging.ptkb.demo", stage="other collections")


def _forget_cached_campaigns_on_change() -> None:
    """Cached campaigns (judging.rating.selectors.campaign_cached) are dropped when a campaign is saved or deleted,
    at once and again when the transaction commits (a reader between the two could have cached the old row)."""
    from django.core.cache import cache
    from django.db import transaction
    from django.db.models.signals import post_delete, post_save

    from judging.models import Campaign
    from judging.rating.selectors import campaign_cache_key

    def forget(sender: Any, instance: Any, **kwargs: Any) -> None:
        key = campaign_cache_key(instance.pk)
        cache.delete(key)
        transaction.on_commit(lambda: cache.delete(key))

    post_save.connect(forget, sender=Campaign, dispatch_uid="judging-campaign-saved")
    post_delete.connect(forget, sender=Campaign, dispatch_uid="judging-campaign-deleted")

"""Django admin (/django-admin/) for rating campaigns; day-to-day work happens on the rating pages."""

from django.contrib import admin

from judging.models import Campaign, RaterStatus, Rating, RatingAssignment, RatingItem


@admin.register(Campaign)
class CampaignAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "status", "raters_per_item", "sample_size", "created_at"]
    list_filter = ["kind", "status"]
    search_fields = ["name"]


@admin.register(RatingItem)
class RatingItemAdmin(admin.ModelAdmin):
    list_display = ["pk", "campaign", "turn_key", "passage_id", "source", "is_gold", "completed_count"]
    list_filter = ["campaign", "is_gold", "source"]
    raw_id_fields = ["paraphrase", "turn"]


@admin.register(RatingAssignment)
class RatingAssignmentAdmin(admin.ModelAdmin):
    list_display = ["pk", "campaign", "item", "rater", "status", "leased_at", "expires_at", "completed_at"]
    list_filter = ["campaign", "status"]
    raw_id_fields = ["item", "rater"]


@admin.register(Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ["pk", "campaign", "item", "rater", "values", "seconds_on_task", "submitted_at"]
    list_filter = ["campaign"]
    raw_id_fields = ["assignment", "item", "rater"]


@admin.register(RaterStatus)
class RaterStatusAdmin(admin.ModelAdmin):
    list_display = ["campaign", "rater", "gold_answers", "gold_correct", "paused", "override", "external_id"]
    list_filter = ["campaign", "paused"]

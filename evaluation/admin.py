"""Django admin for runs, qrels versions and stored scores (read-mostly; writes go through services)."""

from django.contrib import admin

from evaluation.models import EvaluationJob, LeaderboardSnapshot, QrelsVersion, Run, TurnScores


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ("name", "collection", "test_set", "created_at")
    list_filter = ("collection",)
    search_fields = ("name",)


@admin.register(QrelsVersion)
class QrelsVersionAdmin(admin.ModelAdmin):
    list_display = ("name", "collection", "parent", "created_at")
    list_filter = ("collection",)


@admin.register(TurnScores)
class TurnScoresAdmin(admin.ModelAdmin):
    list_display = ("run", "turn", "version", "threshold", "computed_at")
    list_filter = ("version",)
    raw_id_fields = ("run", "turn", "version")


@admin.register(EvaluationJob)
class EvaluationJobAdmin(admin.ModelAdmin):
    list_display = ("pk", "collection", "kind", "run", "status", "progress_done", "progress_total", "created_at")
    list_filter = ("status", "kind")


@admin.register(LeaderboardSnapshot)
class LeaderboardSnapshotAdmin(admin.ModelAdmin):
    list_display = ("pk", "version", "measure", "judged_turns", "qrels_count", "trigger", "created_at")

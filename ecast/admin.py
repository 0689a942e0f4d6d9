"""Django admin (/django-admin/) for the dataset models; curation itself happens on the ecast pages."""

from django.contrib import admin

from ecast.models import (
    Collection,
    Conversation,
    ImportJob,
    Paraphrase,
    Passage,
    PtkbStatement,
    TestSet,
    TestSetItem,
    Turn,
)


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ["name", "year", "relevance_threshold", "created_at"]
    search_fields = ["name"]


class PtkbStatementInline(admin.TabularInline):
    model = PtkbStatement
    extra = 0


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["topic_id", "collection", "title"]
    list_filter = ["collection"]
    search_fields = ["topic_id", "title"]
    inlines = [PtkbStatementInline]


@admin.register(Turn)
class TurnAdmin(admin.ModelAdmin):
    list_display = ["turn_id", "collection", "number", "raw_utterance", "utterance_class"]
    list_filter = ["collection", "utterance_class"]
    search_fields = ["turn_id", "raw_utterance", "manual_rewrite"]
    raw_id_fields = ["conversation", "depends_on"]


@admin.register(Passage)
class PassageAdmin(admin.ModelAdmin):
    list_display = ["passage_id", "source"]
    search_fields = ["passage_id", "text"]


@admin.register(Paraphrase)
class ParaphraseAdmin(admin.ModelAdmin):
    list_display = ["id", "turn", "kind", "status", "origin", "is_current", "text"]
    list_filter = ["kind", "status", "origin", "is_current", "turn__collection"]
    search_fields = ["text", "turn__turn_id"]
    raw_id_fields = ["turn", "edited_from", "pair", "created_by"]


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "file_name", "collection", "status", "created_at", "finished_at"]
    list_filter = ["kind", "status"]


class TestSetItemInline(admin.TabularInline):
    model = TestSetItem
    raw_id_fields = ["turn", "paraphrase"]
    extra = 0


@admin.register(TestSet)
class TestSetAdmin(admin.ModelAdmin):
    list_display = ["name", "collection", "kind", "index", "seed", "created_at"]
    list_filter = ["collection", "kind"]
    inlines = [TestSetItemInline]

"""Pages: the role dashboard, the API-token page, and the admin curation pages (collections → turns → paraphrases)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from ecast import dashboard, selectors, services
from ecast.core.pages import refusal_shown
from ecast.core.permissions import admin_required, user_roles
from ecast.models import Collection, Conversation, Paraphrase, Turn, UtteranceClass

PAGE_SIZE = 50


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Dashboard per role: admins see collections, work in progress (jobs of every kind, open campaigns, pools) and
    recent imports; raters/assessors see their queues."""
    context: dict[str, Any] = {"roles": sorted(user_roles(request.user))}
    if "admin" in context["roles"]:
        context["collections"] = selectors.collection_list()[:20]
        context["recent_imports"] = selectors.import_job_recent(limit=8)
        context["imports_url"] = reverse("imports")
        context["in_progress"] = {section: dashboard.activity_rows(section=section) for section in dashboard.SECTIONS}
    return render(request, "ecast/home.html", context)


def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers fetch on pages that name no icon: the app's SVG icon."""
    return redirect(static("ecast/favicon.svg"), permanent=True)


@login_required
def account_token(request: HttpRequest) -> HttpResponse:
    """Shows the user's API token (created on first visit); POST regenerates it."""
    user: Any = request.user  # login_required guarantees an authenticated user
    if request.method == "POST":
        Token.objects.filter(user=user).delete()
        Token.objects.create(user=user)
        messages.success(request, "A new API token was created; the old one no longer works.")
        return redirect("account-token")
    token, _ = Token.objects.get_or_create(user=user)
    return render(request, "ecast/account_token.html", {"token": token})


# ---------------------------------------------------------------- collections


class CollectionForm(forms.ModelForm):
    class Meta:
        model = Collection
        fields = ["name", "year", "corpus_note", "relevance_threshold"]
        widgets = {"corpus_note": forms.Textarea(attrs={"rows": 2})}

    relevance_threshold = forms.IntegerField(min_value=0, max_value=4, initial=1)


@admin_required
def collection_list(request: HttpRequest) -> HttpResponse:
    """All collections with counts; a form to create one."""
    # Sent here from a page that needs a collection (the import page): back there with the new one chosen.
    back = request.POST.get("next") or request.GET.get("next") or ""
    if not (back.startswith("/") and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()})):
        back = ""
    form = CollectionForm(request.POST or None, initial={"name": request.GET.get("name", "")})
    if request.method == "POST" and form.is_valid():
        with refusal_shown(form) as refused:
            collection = services.collection_create(**form.cleaned_data)
        if not refused:
            messages.success(request, f"Collection “{collection.name}” created.")
            if back:
                return redirect(f"{back}{'&' if '?' in back else '?'}collection={collection.pk}")
            return redirect("collection-detail", pk=collection.pk)
    return render(
        request,
        "ecast/collection_list.html",
        {"collections": selectors.collection_list(), "form": form, "imports_url": reverse("imports"), "back": back},
    )


@admin_required
def collection_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A collection's conversations, paraphrase status counts, and its settings form."""
    collection = get_object_or_404(Collection, pk=pk)
    form = CollectionForm(request.POST or None, instance=collection)
    if request.method == "POST":
        if form.is_valid():
            with refusal_shown(form) as refused:
                services.collection_update(collection=Collection.objects.get(pk=pk), **form.cleaned_data)
            if not refused:
                messages.success(request, "Collection settings saved.")
                return redirect("collection-detail", pk=pk)
        collection.refresh_from_db()
    return render(
        request,
        "ecast/collection_detail.html",
        {
            "collection": collection,
            "conversations": selectors.conversation_list(collection=collection),
            "counts": selectors.paraphrase_counts(collection=collection),
            "form": form,
            "imports_url": reverse("imports"),
        },
    )


@admin_required
def conversation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A conversation's turns with their rewrites and paraphrase counts; a conversation tree drawn as one."""
    conversation = get_object_or_404(Conversation.objects.select_related("collection"), pk=pk)
    turns = list(selectors.turn_list(conversation=conversation))
    return render(
        request,
        "ecast/conversation_detail.html",
        {
            "conversation": conversation,
            "turns": turns,
            "tree": selectors.conversation_tree(turns=turns),
            "ptkb": selectors.ptkb_for_conversation(conversation_id=conversation.pk),
        },
    )


# ---------------------------------------------------------------- search


def _search_filters(params: Any) -> tuple[Collection | None, dict[str, Any]]:
    """The search page's filters from a query string (or the bulk form's copy of it); unknown values are ignored."""
    collection = None
    if params.get("collection", "").isdigit():
        collection = Collection.objects.filter(pk=int(params["collection"])).first()
    filters: dict[str, Any] = {
        "q": params.get("q", ""),
        "status": params.get("status", "") if params.get("status") in Paraphrase.Status.values else "",
        "kind": params.get("kind", "") if params.get("kind") in Paraphrase.Kind.values else "",
        "origin": params.get("origin", "") if params.get("origin") in Paraphrase.Origin.values else "",
        "utterance_class": params.get("utterance_class", "")
        if params.get("utterance_class") in UtteranceClass.values
        else "",
        "include_history": params.get("include_history") == "1",
        "half_decided": params.get("half_decided") == "1",
        "job": int(params["job"]) if str(params.get("job", "")).isdigit() else None,
    }
    return collection, filters


@admin_required
def paraphrase_search(request: HttpRequest) -> HttpResponse:
    """Text search over utterances and paraphrases with filters, pagination and bulk approve/reject of pairs."""
    collection, filters = _search_filters(request.GET)
    results = selectors.paraphrase_search(collection=collection, **filters)
    page = Paginator(results, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "ecast/paraphrase_search.html",
        {
            "page": page,
            "filters": filters,
            "collection": collection,
            "collections": Collection.objects.order_by("name"),
            "statuses": Paraphrase.Status.choices,
            "kinds": Paraphrase.Kind.choices,
            "origins": Paraphrase.Origin.choices,
            "classes": UtteranceClass.choices,
            "querystring": query.urlencode(),
        },
    )


BULK_ACTIONS = {"approve": Paraphrase.Status.APPROVED, "reject": Paraphrase.Status.REJECTED}


@require_POST
@admin_required
def paraphrase_bulk(request: HttpRequest) -> HttpResponse:
    """Approve or reject, as pairs, the ticked paraphrases or every paraphrase matching the search's filters."""
    back = reverse("paraphrase-search") + "?" + request.POST.get("querystring", "")
    action = request.POST.get("action", "")
    if action not in BULK_ACTIONS:
        messages.error(request, "Choose approve or reject.")
        return HttpResponseRedirect(back)
    if request.POST.get("scope") == "filtered":
        collection, filters = _search_filters(QueryDict(request.POST.get("querystring", "")))
        chosen = selectors.paraphrase_search(collection=collection, **filters)
    else:
        ids = [int(x) for x in request.POST.getlist("ids") if x.isdigit()]
        if not ids:
            messages.error(request, "Tick at least one paraphrase, or use “… all matching”.")
            return HttpResponseRedirect(back)
        chosen = Paraphrase.objects.filter(pk__in=ids)
    done = services.paraphrase_bulk_status(paraphrases=chosen, status=BULK_ACTIONS[action], user=request.user)
    verb = "approved" if action == "approve" else "rejected"
    messages.success(
        request,
        f"{done['pairs']} pair{'s' if done['pairs'] != 1 else ''} {verb} "
        f"({done['paraphrases']} paraphrase{'s' if done['paraphrases'] != 1 else ''} changed status).",
    )
    return HttpResponseRedirect(back)


# ---------------------------------------------------------------- per-turn curation


class ParaphraseAddForm(forms.Form):
    manual_text = forms.CharField(
        label="Manual paraphrase (context-independent)", widget=forms.Textarea(attrs={"rows": 2})
    )
    raw_text = forms.CharField(
        label="Raw paraphrase (context-dependent)", required=False, widget=forms.Textarea(attrs={"rows": 2})
    )


class ParaphraseEditForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}))


@admin_required
def turn_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """Source texts, paraphrase pairs with provenance and history, repeated n-grams, and curation actions."""
    turn = get_object_or_404(Turn.objects.select_related("conversation", "collection"), pk=pk)
    # "Reintroduce" links prefill the add form with a feedback/revealment sentence + a paraphrase (GET).
    initial = {"manual_text": request.GET.get("prefill_manual", ""), "raw_text": request.GET.get("prefill_raw", "")}
    add_form = ParaphraseAddForm(request.POST or None, initial=initial)
    if request.method == "POST":
        if add_form.is_valid():
            with refusal_shown(add_form) as refused:
                services.paraphrase_add(
                    turn=turn,
                    manual_text=add_form.cleaned_data["manual_text"],
                    raw_text=add_form.cleaned_data["raw_text"] or None,
                    user=request.user,
                )
            if not refused:
                messages.success(request, "Paraphrase pair added.")
                return redirect("turn-detail", pk=turn.pk)
    data = selectors.turn_page(turn=turn)
    reintroduce = [("feedback", s) for s in turn.feedback_sentences or []] + [
        ("revealment", s) for s in turn.revealment_sentences or []
    ]
    return render(
        request,
        "ecast/turn_detail.html",
        {
            "turn": turn,
            "page": data,
            "add_form": add_form,
            "reintroduce": reintroduce,
            "repeated": [(" ".join(gram), count) for gram, count in data.repeated.items()][:40],
        },
    )


def _back(request: HttpRequest, paraphrase: Paraphrase) -> HttpResponseRedirect:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return HttpResponseRedirect(target)
    return HttpResponseRedirect(reverse("turn-detail", args=[paraphrase.turn_id]) + f"#p{paraphrase.pk}")


def _advance(request: HttpRequest, paraphrase: Paraphrase) -> HttpResponseRedirect:
    """After approve/reject on the turn page: the next undecided pair of the turn, else the next turn."""
    if request.POST.get("next"):
        return _back(request, paraphrase)
    turn, target = selectors.curation_next(paraphrase=paraphrase)
    if target is not None:
        return HttpResponseRedirect(reverse("turn-detail", args=[target.turn_id]) + f"#p{target.pk}")
    if turn is None:
        messages.info(request, "Every pair of this turn is decided, and this is the collection's last turn.")
        return _back(request, paraphrase)
    messages.info(request, f"Every pair of turn {paraphrase.turn.turn_id} is decided: on to turn {turn.turn_id}.")
    return HttpResponseRedirect(reverse("turn-detail", args=[turn.pk]))


def _status_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    paraphrase = get_object_or_404(Paraphrase.objects.select_related("turn"), pk=pk)
    service = {
        "approve": services.paraphrase_approve,
        "reject": services.paraphrase_reject,
        "reset": services.paraphrase_reset,
    }[action]
    with refusal_shown(request) as refused:
        paraphrase = service(paraphrase=paraphrase, user=request.user)
    if refused:
        return _back(request, paraphrase)
    return _back(request, paraphrase) if action == "reset" else _advance(request, paraphrase)


@require_POST
@admin_required
def paraphrase_approve(request: HttpRequest, pk: int) -> HttpResponse:
    """Approve a paraphrase pair and move on to the next undecided pair."""
    return _status_action(request, pk, "approve")


@require_POST
@admin_required
def paraphrase_reject(request: HttpRequest, pk: int) -> HttpResponse:
    """Reject a paraphrase pair and move on to the next undecided pair."""
    return _status_action(request, pk, "reject")


@require_POST
@admin_required
def paraphrase_reset(request: HttpRequest, pk: int) -> HttpResponse:
    """Put a paraphrase pair back to candidate and stay on it."""
    return _status_action(request, pk, "reset")


@require_POST
@admin_required
def paraphrase_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """Save an edited text as a new row (the old one is kept in the history)."""
    paraphrase = get_object_or_404(Paraphrase, pk=pk)
    form = ParaphraseEditForm(request.POST)
    if not form.is_valid():
        messages.error(request, "The paraphrase text may not be empty.")
        return _back(request, paraphrase)
    with refusal_shown(request) as refused:
        new = services.paraphrase_edit(paraphrase=paraphrase, text=form.cleaned_data["text"], user=request.user)
    if refused:
        return _back(request, paraphrase)
    messages.success(request, "Edit saved; the previous text is kept in the history.")
    return HttpResponseRedirect(reverse("turn-detail", args=[new.turn_id]) + f"#p{new.pk}")


@admin_required
def paraphrase_history(request: HttpRequest, pk: int) -> HttpResponse:
    """The full edit chain of one paraphrase."""
    paraphrase = get_object_or_404(Paraphrase.objects.select_related("turn"), pk=pk)
    return render(
        request,
        "ecast/paraphrase_history.html",
        {"paraphrase": paraphrase, "chain": selectors.paraphrase_history(paraphrase=paraphrase)},
    )

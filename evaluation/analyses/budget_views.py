"""Page of the budget simulations (admin only): the list and the form to start one; the report is the shared
analysis page (``views.analysis_detail``)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_http_methods

from ecast.core.permissions import admin_required
from evaluation.analyses.forms import BudgetForm, split_list
from evaluation.analyses.services import budget as budget_services
from evaluation.analyses.views import collection_for, create_and_open, list_page


@admin_required
@require_http_methods(["GET", "POST"])
def budget_page(request: HttpRequest) -> HttpResponse:
    """Budget simulations of a collection and the form to replay adjudication orders on a qrels version."""
    collection = collection_for(request, "budget")
    form = BudgetForm(request.POST or None, collection=collection)
    if request.method == "POST" and form.is_valid() and collection is not None:
        d = form.cleaned_data
        created = create_and_open(
            request,
            form,
            "budget",
            "Budget simulation",
            lambda: budget_services.budget_simulation_create(
                collection=collection,
                runs=list(d["runs"]),
                qrels_version=d["qrels_version"],
                depth=d["depth"],
                strategies=d["strategies"],
                measures=split_list(d["measures"]),
                fractions=d["fractions"],
                prior_version=d["prior_version"],
                name=d["name"],
                created_by=request.user,
            ),
        )
        if created is not None:
            return created
    return list_page(request, "budget", collection, form)

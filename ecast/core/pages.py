"""The one way a page view shows a refusal: a :class:`DomainError` or Django ``ValidationError`` a service raised.

The REST side has one exception handler (``ecast.core.rest``); pages use :func:`refusal_shown` instead of their own
``except`` clauses::

    with refusal_shown(form) as refused:
        job = services.job_create(**form.cleaned_data)
    if not refused:
        return redirect("job", pk=job.pk)

A refusal stops the block and is shown on the form (an error that names one of the form's fields beside that field,
the rest above the form), as one error message (pass the request), or nowhere (pass nothing: the page puts
``refused.messages`` or ``refused.text`` where it wants them). Anything else propagates as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from django import forms
from django.contrib import messages
from django.core.exceptions import BadRequest, ValidationError
from django.http import Http404, HttpRequest

from ecast.core.errors import DomainError

# What a page shows as a refusal; anything else is a bug and propagates.
REFUSALS = (ValidationError, DomainError)

# A refusal can list every bad line of an upload; a page shows the first ones.
MAX_SHOWN = 20


def refusal_messages(exc: ValidationError | DomainError) -> list[str]:
    """The messages of a refusal as pages show them (without the field names the API adds), at most ``MAX_SHOWN``."""
    if isinstance(exc, ValidationError):
        return list(exc.messages)[:MAX_SHOWN]
    return [str(exc)]


@dataclass
class Refused:
    """What :func:`refusal_shown` caught: false while nothing was refused."""

    error: ValidationError | DomainError | None = None
    messages: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.error is not None

    @property
    def text(self) -> str:
        """The messages in one line, as a flash message shows them."""
        return "; ".join(self.messages)

    @property
    def code(self) -> str:
        """The refusal's code (``conflict``, ``not_found``…; a ``ValidationError``'s own code), else ``""``."""
        return str(getattr(self.error, "code", "") or "")


def _add_to_form(form: forms.BaseForm, exc: ValidationError | DomainError, field_name: str | None) -> None:
    named: list[tuple[str | None, list[str]]] = [(None, refusal_messages(exc))]
    if isinstance(exc, ValidationError) and hasattr(exc, "error_dict"):
        named = [(name, [str(m) for e in errors for m in e.messages]) for name, errors in exc.error_dict.items()]
    shown = 0
    for name, texts in named:
        target = name if name in form.fields else field_name
        for text in texts:
            if shown < MAX_SHOWN:
                form.add_error(target, text)
                shown += 1


@contextmanager
def refusal_shown(target: HttpRequest | forms.BaseForm | None = None, *, field: str | None = None) -> Iterator[Refused]:
    """Run the block; a refusal it raises stops it, is shown on ``target`` and is kept on the yielded ``Refused``.

    ``target`` is a form (errors that name one of its fields go beside that field; the others beside ``field``, or
    above the form when ``field`` is None), a request (one error message, its messages joined with "; "), or None.
    """
    refused = Refused()
    try:
        yield refused
    except REFUSALS as exc:
        refused.error, refused.messages = exc, refusal_messages(exc)
        if isinstance(target, forms.BaseForm):
            _add_to_form(target, exc, field)
        elif isinstance(target, HttpRequest):
            messages.error(target, refused.text)


@contextmanager
def refusal_as_404() -> Iterator[None]:
    """A refusal raised by the block answers 404 with its message: for a page's bad query parameter (a measure
    ir_measures cannot parse, say), where there is no form to show it on."""
    try:
        yield
    except REFUSALS as exc:
        raise Http404("; ".join(refusal_messages(exc))) from exc


MAX_ID = 2**63 - 1


def query_id(params: Mapping[str, str], name: str, *, what: str = "query parameter") -> int | None:
    """The id in parameter ``name`` of ``params`` (a page's ``request.GET`` or ``request.POST``, an API's
    ``query_params``; None when absent or empty); anything but a whole number of an id's range answers 400 naming
    the parameter (``BadRequest``, which the root URLconf's ``handler400`` shows with its message). ``what`` names
    the kind of parameter in the message ("field" for a posted form)."""
    raw = (params.get(name) or "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{what} {name!r} must be a whole number, got {raw[:40]!r}") from None
    if not 0 <= value <= MAX_ID:  # ids are 64-bit: a bigger number overflows SQLite's integer before matching nothing
        raise BadRequest(f"{what} {name!r} is not an id: {raw[:40]!r} is out of range")
    return value

"""What every form page shares: a one-option choice starts on that option instead of "---------"."""

from __future__ import annotations

from django import forms


def preselect_single_choices(form: forms.BaseForm) -> None:
    """Each required single-choice model field with exactly one option (one collection, one qrels version) starts
    on it, with no empty "---------" entry to pick first."""
    for name, field in form.fields.items():
        if not isinstance(field, forms.ModelChoiceField) or isinstance(field, forms.ModelMultipleChoiceField):
            continue
        if not field.required or field.queryset is None:
            continue
        options = list(field.queryset[:2])
        if len(options) == 1:
            field.empty_label = None
            form.initial.setdefault(name, options[0].pk)

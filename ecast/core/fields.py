"""Form fields that pick rows by id, refusing an id no row can have before the database sees it.

Django's model choice fields pass a posted id to the database as it came; a number past 64 bits overflows SQLite's
integer (an OverflowError, a 500) instead of matching nothing. These answer with the field's usual "select a valid
choice" error instead. Every form of the product picks rows with them.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from ecast.core.pages import MAX_ID


def out_of_range(value: Any) -> bool:
    """True for a value that looks like a whole number but is no id (negative or past 64 bits)."""
    text = str(value).strip()
    if not text.lstrip("-").isdigit():
        return False
    try:
        return not 0 <= int(text) <= MAX_ID
    except ValueError:  # digits int() refuses
        return True


class IdChoiceField(forms.ModelChoiceField):
    def to_python(self, value: Any) -> Any:
        if value not in self.empty_values and out_of_range(value):
            raise ValidationError(self.error_messages["invalid_choice"], code="invalid_choice")
        return super().to_python(value)


class IdMultipleChoiceField(forms.ModelMultipleChoiceField):
    def clean(self, value: Any) -> Any:
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if item not in self.empty_values and out_of_range(item):
                raise ValidationError(
                    self.error_messages["invalid_choice"], code="invalid_choice", params={"value": str(item)[:40]}
                )
        return super().clean(value)

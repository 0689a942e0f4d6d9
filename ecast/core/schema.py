"""OpenAPI schema class: names nested serializers after their enclosing view.

The project convention puts ``InputSerializer``/``OutputSerializer`` inside each APIView; drf-spectacular would
name all of them "Input"/"Output" and warn about colliding components. Prefixing the enclosing class keeps every
component unique ("ExperimentCreateApiInput") without each view having to set a name.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema


class AutoSchema(SpectacularAutoSchema):
    def get_serializer_name(self, serializer: Any, direction: Any) -> str:
        """Enclosing class + serializer class name for nested serializers, plain class name otherwise."""
        qualname = serializer.__class__.__qualname__
        if "." in qualname and "<locals>" not in qualname:
            return qualname.replace(".", "")
        return super().get_serializer_name(serializer, direction)

"""The OpenAPI schema documents the error answers each operation can give, not only success.

drf-spectacular describes the success response of an operation; a client (and Schemathesis,
``tests/django/test_api_schemathesis.py``) also meets the errors. :class:`AutoSchema` adds,
where they apply and unless a view documents them itself:

- 400 for an operation that takes a body or query parameters (a field → messages object,
  or a list of messages);
- 401 without valid credentials;
- 404 for an operation on one object (not yours, or missing) and for a list (a page past the
  end);
- 411, 413 and 415 for an operation that takes a body: sent without a length, over the
  limit (``config/uploads.py``), or of a media type the operation does not take;
- 429 past a rate limit (``api/throttling.py``), with ``Retry-After``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework.fields import CharField, FileField
from rest_framework.permissions import AllowAny

from api.serializers import DetailSerializer
from api.strict import PY_SPACE

_DETAIL = DetailSerializer
_VALIDATION = OpenApiResponse(
    {
        "anyOf": [
            {"type": "object", "additionalProperties": {}},
            {"type": "array", "items": {"type": "string"}},
        ]
    },
    description="Invalid input: an object mapping each field (or ``non_field_errors``, or "
    "``detail``) to its messages, or a list of messages.",
)


def _detail(description: str) -> OpenApiResponse:
    return OpenApiResponse(_DETAIL, description=description)


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's schema plus the error responses listed in the module docstring."""

    def _error_responses(self) -> dict[str, OpenApiResponse]:
        errors: dict[str, OpenApiResponse] = {}
        body = self.method in ("POST", "PUT", "PATCH") and self.get_request_serializer()
        query = bool(self._get_parameters_of("query"))
        if body or query:
            errors["400"] = _VALIDATION
        if not all(isinstance(p, AllowAny) for p in self.view.get_permissions()):
            errors["401"] = _detail("No valid credentials (a token or a session).")
        if "{" in self.path or self._is_paginated_list():
            errors["404"] = _detail(
                "Not found: no such object among yours, or a page past the end."
            )
        if body:
            errors["411"] = _detail("The body was sent without a Content-Length (chunked).")
            errors["413"] = _detail("The body, or an uploaded file, is over its limit.")
            errors["415"] = _detail("The body's media type is not one this operation takes.")
        errors["429"] = _detail("Too many requests: wait the seconds Retry-After says.")
        return errors

    def _map_serializer_field(self, field: Any, direction: Any, *args: Any, **kw: Any) -> Any:
        schema = super()._map_serializer_field(field, direction, *args, **kw)
        if not isinstance(schema, dict):
            return schema
        bound = getattr(field, "exclusive_minimum", None)
        if bound is not None:
            schema.update(minimum=bound, exclusiveMinimum=True)
        bound = getattr(field, "exclusive_maximum", None)
        if bound is not None:
            schema.update(maximum=bound, exclusiveMaximum=True)
        if isinstance(field, FileField) and not field.allow_empty_file:
            schema["minLength"] = 1  # an empty file is refused
        if getattr(field, "allow_empty", True) is False and schema.get("type") == "array":
            schema["minItems"] = max(1, schema.get("minItems", 0))
        for attr, key in (("min_items", "minItems"), ("max_items", "maxItems")):
            if getattr(field, attr, None) is not None and schema.get("type") == "array":
                schema[key] = getattr(field, attr)
        if (
            direction == "request"
            and isinstance(field, CharField)
            and not field.allow_blank
            and field.trim_whitespace
            and schema.get("type") == "string"
            and "pattern" not in schema
            and "enum" not in schema
        ):
            schema["pattern"] = f"[^{PY_SPACE}]"  # more than spaces (DRF trims them)
        return schema

    def _get_parameters_of(self, where: str) -> list[dict[str, Any]]:
        return [p for p in self._get_parameters() if p.get("in") == where]

    def _is_paginated_list(self) -> bool:
        return bool(
            self.method == "GET" and self._is_list_view() and self._get_paginator() is not None
        )

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for code, error in self._error_responses().items():
            if code not in responses:
                responses[code] = self._get_response_for_code(error, code, direction=direction)
        return responses

    def _get_response_headers_for_code(self, status_code: str, direction: Any = "response") -> Any:
        headers = super()._get_response_headers_for_code(status_code, direction)
        if status_code == "429":
            headers = {
                **(headers or {}),
                "Retry-After": {
                    "schema": {"type": "integer"},
                    "description": "Seconds to wait before the next request.",
                },
            }
        return headers


def _refs(node: Any, out: set[str]) -> set[str]:
    """The component names ``node`` refers to (``$ref`` anywhere inside it)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            out.add(ref.rsplit("/", 1)[1])
        for value in node.values():
            _refs(value, out)
    elif isinstance(node, list):
        for value in node:
            _refs(value, out)
    return out


def drop_unused_components(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Postprocessing hook: leave out the schemas that no operation uses, directly or through
    other schemas (e.g. the request-side twin of a read-only field's schema)."""
    schemas = result.get("components", {}).get("schemas", {})
    used = _refs({k: v for k, v in result.items() if k != "components"}, set())
    todo = list(used)
    while todo:
        for name in _refs(schemas.get(todo.pop(), {}), set()) - used:
            used.add(name)
            todo.append(name)
    for name in [n for n in schemas if n not in used]:
        del schemas[name]
    return result

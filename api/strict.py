"""Request values must be what the schema says they are.

DRF's fields are lenient about JSON types: a string field takes ``0`` (stored as ``"0"``), a
number field ``"1.5"``, an integer field ``"3"``, a boolean field ``"yes"`` or ``1``, a primary
key ``"7"``. The schema says otherwise, so a client that follows it and one that does not
would get the same answer, and a client's type mistake goes unnoticed. :class:`StrictInput`
refuses such values with a 400 naming the field, before DRF converts them. Form bodies
(multipart uploads) are text by nature; a form field there must be given once (DRF would take
the last of several).

DRF also trims spaces around text before it checks ``max_length`` and blankness: a name of 201
characters that starts with a tab passes a limit of 200, and a name of spaces only is
refused as blank though it is not empty. :class:`StrictInput` measures the text as sent, and
the schema says that a text that may not be blank needs a character other than a space.
"""

from __future__ import annotations

from typing import Any

from rest_framework import fields as f
from rest_framework import relations, serializers


def _type_problem(field: Any, value: Any) -> str | None:
    """What is wrong with the JSON type of ``value`` for ``field``; ``None`` if nothing."""
    if value is None or isinstance(field, f.JSONField | f.HiddenField | f.ReadOnlyField):
        return None  # null is the field's own business (allow_null)
    if isinstance(field, relations.ManyRelatedField):
        if not isinstance(value, list):
            return "must be a list of ids"
        return next(
            (
                f"item {i}: {p}"
                for i, v in enumerate(value)
                if (p := _type_problem(field.child_relation, v))
            ),
            None,
        )
    if isinstance(field, relations.PrimaryKeyRelatedField):
        return None if _is_integer(value) else "must be an id (an integer)"
    if isinstance(field, f.ChoiceField) and not isinstance(field, f.MultipleChoiceField):
        if all(isinstance(c, str) for c in field.choices) and not isinstance(value, str):
            return "must be a string"
        return None
    if isinstance(field, f.CharField):
        return None if isinstance(value, str) else "must be a string"
    if isinstance(field, f.BooleanField):
        return None if isinstance(value, bool) else "must be true or false"
    if isinstance(field, f.IntegerField):
        return None if _is_integer(value) else "must be an integer"
    if isinstance(field, f.FloatField | f.DecimalField):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return None if ok else "must be a number"
    if isinstance(field, f.ListField | serializers.ListSerializer):
        if not isinstance(value, list):
            return "must be a list"
        child = field.child
        return next(
            (f"item {i}: {p}" for i, v in enumerate(value) if (p := _type_problem(child, v))),
            None,
        )
    if isinstance(field, f.DictField | serializers.Serializer):
        return None if isinstance(value, dict) else "must be an object"
    return None


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _length_problem(field: Any, value: Any) -> str | None:
    """A text longer than ``max_length`` as sent (DRF measures it after trimming spaces)."""
    limit = getattr(field, "max_length", None)
    if (
        isinstance(field, f.CharField)
        and limit is not None
        and isinstance(value, str)
        and len(value) > limit
    ):
        return f"at most {limit} characters (spaces included)"
    return None


#: The characters ``str.strip`` (so DRF's trimming) takes for spaces, as a regex class.
PY_SPACE = r"\t-\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


# (no docstring: drf-spectacular would take it as the description of every serializer
# that has none of its own)
class StrictInput:
    # a serializer mixin: a JSON object's values must have their fields' JSON types, and a
    # text may be at most ``max_length`` long as sent; a text that may not be blank must hold
    # more than spaces (the schema says so with a pattern, api.schema.AutoSchema)

    fields: Any

    def to_internal_value(self, data: Any) -> Any:
        if hasattr(data, "get"):
            json = type(data) is dict  # a parsed JSON object (a form is a QueryDict)
            errors = {}
            for name, field in self.fields.items():
                if field.read_only or field.source == "*" or name not in data:
                    continue
                value = data.get(name)
                if json:
                    problem = _type_problem(field, value) or _length_problem(field, value)
                elif len(data.getlist(name)) > 1 and not isinstance(field, f.ListField):
                    problem = "given more than once; give it once"
                else:
                    problem = _length_problem(field, value)
                if problem:
                    errors[name] = [problem]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)  # type: ignore[misc]

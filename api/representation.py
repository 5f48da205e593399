"""A faster ``to_representation`` for the API's read-heavy model serializers.

DRF builds a model serializer's fields anew for every serializer instance (model
introspection, about 1 ms a request) and then, for every row and field, goes through
``get_attribute`` / ``to_representation`` with their generic checks (a run list of 36 rows
spent most of its time there). :class:`FastRepresentationMixin` works out once per class
how each readable field reads its value:

- a model field is read straight from the instance, then converted by a plain function
  (``str``, ``int``, ``float``, ISO 8601 date-times in the current time zone, JSON values as
  they are) or by its field's ``to_representation`` (choices, booleans, ...); a foreign key
  answered as a primary key reads the ``<name>_id`` attribute;
- a ``SerializerMethodField`` calls the method on the serializer itself (so ``context`` is
  the request's);
- any other context-free field (nested plain serializers, lists, dicts, choices, ...) goes
  through a field instance built once, exactly as DRF would;

and a serializer with a field it does not know (e.g. hyperlinked ones, which need the request)
keeps DRF's own path. The output is identical to DRF's: ``tests/django/test_api_performance.py``
compares both for every serializer that uses the mixin. Writes (validation, ``fields`` for the
schema) are untouched.
"""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.utils import timezone
from rest_framework import fields as f
from rest_framework import relations, serializers
from rest_framework.fields import SkipField
from rest_framework.relations import PKOnlyObject
from rest_framework.settings import api_settings

# what a step does with the instance
_PLAIN = 0  # getattr, then the converter (or the value itself)
_DATETIME = 1  # getattr, then ISO 8601 in the current time zone like DRF's DateTimeField
_FIELD = 2  # the prepared field's get_attribute + to_representation (DRF's generic path)
_METHOD = 3  # SerializerMethodField: the serializer's own method

# field classes whose ``to_representation`` is a plain function of the value
_CONVERTERS: dict[type, Callable[[Any], Any] | None] = {
    f.CharField: str,
    f.EmailField: str,
    f.SlugField: str,
    f.URLField: str,
    f.IntegerField: int,
    f.FloatField: float,
}
# field classes that need no request, context or parent to turn a value into data
_CONTEXT_FREE = (
    f.BooleanField,
    f.CharField,
    f.ChoiceField,
    f.DateTimeField,
    f.DecimalField,
    f.DictField,
    f.FloatField,
    f.IntegerField,
    f.JSONField,
    f.ListField,
    f.ReadOnlyField,
    f.UUIDField,
    relations.PrimaryKeyRelatedField,
)

Step = tuple[str, int, Any, Any]


def _context_free(field: Any) -> bool:
    if isinstance(field, relations.ManyRelatedField):
        return _context_free(field.child_relation)
    if isinstance(field, serializers.ListSerializer):
        return _context_free(field.child)
    if isinstance(field, serializers.ModelSerializer | relations.HyperlinkedRelatedField):
        return False
    if isinstance(field, serializers.Serializer):
        # a plain nested serializer (not a FastRepresentationMixin one: its methods could read
        # the context of the field built once here)
        return type(field).to_representation is serializers.Serializer.to_representation and all(
            _context_free(sub) for sub in field.fields.values()
        )
    if isinstance(field, f.ListField | f.DictField):
        return _context_free(field.child)
    if type(field) is f._UnvalidatedField:
        return True
    return isinstance(field, _CONTEXT_FREE) and not isinstance(field, f.HiddenField)


def _model_field(model: Any, name: str) -> Any:
    if model is None:
        return None
    try:
        return model._meta.get_field(name)
    except FieldDoesNotExist:
        return None


def _step(field: Any, model: Any) -> Step | None:
    name = field.field_name
    if isinstance(field, serializers.SerializerMethodField):
        return (name, _METHOD, field.method_name, None)
    if not _context_free(field):
        return None
    source = field.source_attrs
    mfield = _model_field(model, source[0]) if len(source) == 1 else None
    concrete = mfield is not None and mfield.concrete and not mfield.many_to_many
    if (
        concrete
        and type(field) is relations.PrimaryKeyRelatedField
        and field.pk_field is None
        and mfield.is_relation
        and mfield.target_field.primary_key
    ):
        return (name, _PLAIN, operator.attrgetter(mfield.attname), None)
    if concrete and not mfield.is_relation:
        get = operator.attrgetter(mfield.attname)
        if type(field) in _CONVERTERS:
            return (name, _PLAIN, get, _CONVERTERS[type(field)])
        if type(field) is f.BigIntegerField and not getattr(
            field, "coerce_to_string", api_settings.COERCE_BIGINT_TO_STRING
        ):
            return (name, _PLAIN, get, int)
        if type(field) is f.JSONField and not field.binary:
            return (name, _PLAIN, get, None)
        if (
            type(field) is f.DateTimeField
            and isinstance(mfield, models.DateTimeField)
            and getattr(field, "format", api_settings.DATETIME_FORMAT) == f.ISO_8601
            and not hasattr(field, "timezone")
        ):
            return (name, _DATETIME, get, field)
        if not isinstance(field, f.ListField | f.DictField | serializers.BaseSerializer):
            # a scalar field (choices, booleans, ...): its own conversion, DRF's lookup skipped
            return (name, _PLAIN, get, field.to_representation)
    return (name, _FIELD, field, None)


def _datetime(value: Any, field: Any, tz: Any) -> Any:
    if type(value) is not dt.datetime or tz is None or value.utcoffset() is None:
        return field.to_representation(value)  # the rare cases, as DRF does them
    text = value.astimezone(tz).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


# Mix into a (model) serializer: same output, a fraction of the time (module doc). No
# docstring: drf-spectacular would take it (inspect.getdoc follows the MRO) as the description
# of every serializer without its own.
class FastRepresentationMixin:
    _fast_plan: list[Step] | None

    @classmethod
    def fast_plan(cls) -> list[Step] | None:
        """The steps of this class (computed once; ``None``: use DRF's own path)."""
        if "_fast_plan" not in cls.__dict__:
            template: Any = cls()
            model = getattr(getattr(cls, "Meta", None), "model", None)
            steps = [_step(field, model) for field in template._readable_fields]
            plan = None if any(s is None for s in steps) else steps
            cls._fast_plan = plan
        return cls.__dict__["_fast_plan"]

    def to_representation(self, instance: Any) -> dict[str, Any]:
        plan = self.fast_plan()
        if plan is None:
            return super().to_representation(instance)  # type: ignore[misc,no-any-return]
        tz = timezone.get_current_timezone() if settings.USE_TZ else None
        ret: dict[str, Any] = {}
        for name, kind, how, extra in plan:
            if kind == _PLAIN:
                value = how(instance)
                ret[name] = value if value is None or extra is None else extra(value)
            elif kind == _DATETIME:
                value = how(instance)
                ret[name] = None if not value else _datetime(value, extra, tz)
            elif kind == _METHOD:
                ret[name] = getattr(self, how)(instance)
            else:
                try:
                    value = how.get_attribute(instance)
                except SkipField:
                    continue
                none = value.pk if isinstance(value, PKOnlyObject) else value
                ret[name] = None if none is None else how.to_representation(value)
        return ret

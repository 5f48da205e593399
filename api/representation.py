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
keeps DRF's own path.

When every field reads one model column (runs, clusters, workloads and accelerator types as
listed), :meth:`FastRepresentationMixin.row_plan` lets a list read ``values_list`` rows instead
of model instances (``api.views.OwnedMixin.list``): building 36 run instances, and above all
parsing their 144 date-times in Python (Django's psycopg loader is pure Python) and formatting
them again, was most of a run list's time. On PostgreSQL, when the answer is in UTC, the
database writes the date-times as text (:class:`UtcIsoText`) and only the zero microseconds
are trimmed off, as ``datetime.isoformat`` leaves them out.

The output is identical to DRF's: ``tests/django/test_api_performance.py`` compares both, for
instances and rows, for every serializer that uses the mixin. Writes (validation, ``fields``
for the schema) are untouched.
"""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
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
    step = _column_step(field, model)
    return step[0] if step is not None else None


def _column_step(field: Any, model: Any) -> tuple[Step, str | None] | None:
    """The field's step and the model column (attname) a ``_PLAIN`` / ``_DATETIME`` step
    reads (``None`` for the others); ``None``: a field the plan does not know."""
    name = field.field_name
    if isinstance(field, serializers.SerializerMethodField):
        return (name, _METHOD, field.method_name, None), None
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
        column = mfield.attname
        return (name, _PLAIN, operator.attrgetter(column), None), column
    if concrete and not mfield.is_relation:
        column = mfield.attname
        get = operator.attrgetter(column)
        if type(field) in _CONVERTERS:
            return (name, _PLAIN, get, _CONVERTERS[type(field)]), column
        if type(field) is f.BigIntegerField and not getattr(
            field, "coerce_to_string", api_settings.COERCE_BIGINT_TO_STRING
        ):
            return (name, _PLAIN, get, int), column
        if type(field) is f.JSONField and not field.binary:
            return (name, _PLAIN, get, None), column
        if (
            type(field) is f.DateTimeField
            and isinstance(mfield, models.DateTimeField)
            and getattr(field, "format", api_settings.DATETIME_FORMAT) == f.ISO_8601
            and not hasattr(field, "timezone")
        ):
            return (name, _DATETIME, get, field), column
        if not isinstance(field, f.ListField | f.DictField | serializers.BaseSerializer):
            # a scalar field (choices, booleans, ...): its own conversion, DRF's lookup skipped
            return (name, _PLAIN, get, field.to_representation), column
    return (name, _FIELD, field, None), None


def _datetime(value: Any, field: Any, tz: Any) -> Any:
    if type(value) is not dt.datetime or tz is None or value.utcoffset() is None:
        return field.to_representation(value)  # the rare cases, as DRF does them
    text = value.astimezone(tz).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


# (output name, column index, kind, converter) of a column that needs converting
RowStep = tuple[str, int, int, Any]


class UtcIsoText(models.Func):
    """PostgreSQL: a ``timestamptz`` as ``YYYY-MM-DDTHH:MM:SS.ffffff`` text in UTC.

    Parsing a date-time in Python (Django's psycopg loader is pure Python) and formatting it
    again costs more than everything else a listed run needs; the database formats it for a
    fraction of that and :func:`_utc_text` only trims it to what DRF answers.
    """

    template = "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US')"
    output_field = models.CharField()


def _utc_text(text: str) -> str:
    """:class:`UtcIsoText`'s text as DRF writes a UTC date-time (no zero microseconds)."""
    return (text[:-7] if text.endswith(".000000") else text) + "Z"


@dataclass(frozen=True)
class RowPlan:
    """How a list reads its rows straight from ``values_list(*select(...))`` (no model
    instances): each row is ``dict(zip(names, row))``, then the ``convert`` steps fix some
    values."""

    names: tuple[str, ...]
    columns: tuple[str, ...]
    convert: tuple[RowStep, ...]
    datetimes: frozenset[str]  # the columns of the _DATETIME steps

    def utc_text(self, vendor: str) -> bool:
        """Whether the database can format the date-times: PostgreSQL, and they are answered
        in UTC (DRF's default time zone is the current one)."""
        return (
            bool(self.datetimes)
            and vendor == "postgresql"
            and settings.USE_TZ
            and timezone.get_current_timezone_name() in ("UTC", "Etc/UTC")
        )

    def select(self, utc_text: bool) -> list[Any]:
        """What ``values_list`` reads: the columns, with the date-times as
        :class:`UtcIsoText` if ``utc_text`` (``represent_rows`` knows them by their type)."""
        if not utc_text:
            return list(self.columns)
        return [UtcIsoText(c) if c in self.datetimes else c for c in self.columns]


# converters that change nothing in what the database answers for these model fields
_IDENTITY: dict[Callable[[Any], Any], tuple[type, ...]] = {
    str: (models.CharField, models.TextField),
    int: (models.IntegerField,),  # and its subclasses: auto, big, small, positive
}


def _needs_converting(kind: int, extra: Any, mfield: Any) -> bool:
    if kind == _DATETIME:
        return True
    return extra is not None and not isinstance(mfield, _IDENTITY.get(extra, ()))


def _make_row_plan(steps: list[tuple[Step, str | None]], model: Any) -> RowPlan | None:
    """A row plan when every field reads one model column (``_PLAIN`` / ``_DATETIME``)."""
    if any(column is None or step[1] not in (_PLAIN, _DATETIME) for step, column in steps):
        return None
    columns = tuple(column for _, column in steps if column is not None)
    if len(set(columns)) != len(columns):
        return None  # two fields of one column: values_list would answer it once
    convert = tuple(
        (name, i, kind, extra)
        for i, ((name, kind, _, extra), column) in enumerate(steps)
        if _needs_converting(kind, extra, model._meta.get_field(column))
    )
    datetimes = frozenset(column for step, column in steps if step[1] == _DATETIME)
    return RowPlan(tuple(step[0] for step, _ in steps), columns, convert, datetimes)


# Mix into a (model) serializer: same output, a fraction of the time (module doc). No
# docstring: drf-spectacular would take it (inspect.getdoc follows the MRO) as the description
# of every serializer without its own.
class FastRepresentationMixin:
    _fast_plan: list[Step] | None
    _row_plan: RowPlan | None

    @classmethod
    def _plans(cls) -> None:
        if "_fast_plan" not in cls.__dict__:
            template: Any = cls()
            model = getattr(getattr(cls, "Meta", None), "model", None)
            steps = [_column_step(field, model) for field in template._readable_fields]
            if any(s is None for s in steps):
                cls._row_plan = None
                cls._fast_plan = None
            else:
                known = [s for s in steps if s is not None]
                cls._row_plan = _make_row_plan(known, model)
                cls._fast_plan = [step for step, _ in known]

    @classmethod
    def fast_plan(cls) -> list[Step] | None:
        """The steps of this class (computed once; ``None``: use DRF's own path)."""
        cls._plans()
        return cls.__dict__["_fast_plan"]

    @classmethod
    def row_plan(cls) -> RowPlan | None:
        """The row plan of this class (computed once; ``None``: it needs model instances)."""
        cls._plans()
        return cls.__dict__["_row_plan"]

    @classmethod
    def represent_rows(cls, rows: Iterable[tuple[Any, ...]]) -> list[dict[str, Any]]:
        """The data of ``values_list(*row_plan().select(...))`` rows: what ``many=True``
        answers for the same rows as model instances."""
        plan = cls.row_plan()
        if plan is None:
            raise TypeError(f"{cls.__name__} needs model instances")
        tz = timezone.get_current_timezone() if settings.USE_TZ else None
        names, convert = plan.names, plan.convert
        out = []
        for row in rows:
            item = dict(zip(names, row, strict=True))
            for name, i, kind, extra in convert:
                value = row[i]
                if value is None:
                    continue
                if kind == _PLAIN:
                    item[name] = extra(value)
                elif type(value) is str:  # UtcIsoText
                    item[name] = _utc_text(value)
                else:
                    item[name] = _datetime(value, extra, tz)
            out.append(item)
        return out

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

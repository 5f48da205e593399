"""Hyper-parameters of a policy, typed and checked from its constructor's signature.

The signature of a policy's ``__init__`` is the one specification of what it takes; the API,
the web form and the catalogue read it here, so a bad value is refused when an experiment is
created (naming ``policies[i].params.<name>``), never in a worker. Each parameter's
annotation says:

- its type: ``bool``, ``int`` (within a signed 64-bit integer), ``float`` (finite; an integer
  is accepted), ``str``, ``tuple[float, ...]`` or ``tuple[int, ...]`` (a JSON list), or any
  of these ``| None``;
- its values: ``Literal["a", "b"]`` lists the strings allowed; ``Annotated[float, POSITIVE]``
  (or :data:`NON_NEGATIVE`, or any :class:`Range`) bounds a number, or each number of a
  tuple.

A parameter without a default is required. Checks that involve several values (Tiresias's
thresholds must ascend) stay in the constructor: :func:`policy_errors` builds the policy once
the types are right and reports its ``ValueError``.
"""

from __future__ import annotations

import inspect
import math
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Range:
    """``Annotated`` metadata: the smallest value a number (or each number of a tuple) may
    take; ``exclusive`` excludes the minimum itself."""

    minimum: float
    exclusive: bool = False

    def allows(self, x: float) -> bool:
        return x > self.minimum if self.exclusive else x >= self.minimum

    def describe(self) -> str:
        if self.minimum == 0:
            return "positive" if self.exclusive else "zero or positive"
        return f"{'above' if self.exclusive else 'at least'} {self.minimum:g}"


#: A number above 0 (a duration, a knob that 0 would make meaningless).
POSITIVE = Range(0.0, exclusive=True)
#: A number of 0 or more.
NON_NEGATIVE = Range(0.0)

_KINDS = {bool: "bool", int: "int", float: "float", str: "str"}


@dataclass(frozen=True)
class ParamSpec:
    """One hyper-parameter as its annotation and default describe it.

    ``kind`` is ``bool``, ``int``, ``float``, ``str``, ``float-list``, ``int-list`` or
    ``any`` (annotation not understood: the value is not checked here).
    """

    name: str
    kind: str
    optional: bool
    required: bool
    default: Any
    choices: tuple[str, ...] | None = None
    range: Range | None = None

    @property
    def type_name(self) -> str:
        base = {"float-list": "tuple[float, ...]", "int-list": "tuple[int, ...]"}.get(
            self.kind, self.kind
        )
        return f"{base} | None" if self.optional else base

    def check(self, value: Any) -> Any:
        """``value`` normalised (lists for tuples, floats for floats); ``ValueError`` saying
        what is wrong otherwise."""
        if value is None:
            if self.optional:
                return None
            raise ValueError(f"must be {self._wanted()}, not null")
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"must be true or false, got {_show(value)}")
            return value
        if self.kind == "str":
            if not isinstance(value, str):
                raise ValueError(f"must be a string, got {_show(value)}")
            if self.choices is not None and value not in self.choices:
                raise ValueError(f"must be one of {', '.join(self.choices)}; got {_show(value)}")
            return value
        if self.kind in ("int", "float"):
            return self._number(value, self.kind)
        if self.kind in ("float-list", "int-list"):
            if not isinstance(value, list | tuple):
                raise ValueError(f"must be a list of numbers, got {_show(value)}")
            item = self.kind.partition("-")[0]
            out = []
            for i, x in enumerate(value):
                try:
                    out.append(self._number(x, item))
                except ValueError as exc:
                    raise ValueError(f"item {i} {exc}") from None
            return out
        return value

    def _number(self, value: Any, kind: str) -> float | int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"must be {_article(kind)}, got {_show(value)}")
        if kind == "int":
            if isinstance(value, float):
                if not value.is_integer():
                    raise ValueError(f"must be an integer, got {_show(value)}")
                value = int(value)
            if abs(value) > INT64_MAX:
                raise ValueError(f"must be an integer within ±{INT64_MAX}, got {_show(value)}")
            out: float | int = int(value)
        else:
            try:
                out = float(value)
            except OverflowError:
                out = math.inf
            if not math.isfinite(out):
                raise ValueError(f"must be a finite number, got {_show(value)}")
        if self.range is not None and not self.range.allows(out):
            raise ValueError(f"must be {self.range.describe()}, got {_show(value)}")
        return out

    def _wanted(self) -> str:
        if self.kind in ("float-list", "int-list"):
            return "a list of numbers"
        return _article(self.kind) if self.kind != "any" else "a value"


def _article(kind: str) -> str:
    return {"int": "an integer", "float": "a number", "str": "a string", "bool": "a boolean"}.get(
        kind, kind
    )


def _show(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(name: str, annotation: Any, default: Any) -> ParamSpec:
    optional = default is None
    rng: Range | None = None
    choices: tuple[str, ...] | None = None
    ann = annotation
    while True:  # peel Annotated[...] and ... | None, in either order
        origin = get_origin(ann)
        if origin is Annotated:
            base, *meta = get_args(ann)
            rng = next((m for m in meta if isinstance(m, Range)), rng)
            ann = base
        elif origin in (Union, types.UnionType) and type(None) in get_args(ann):
            optional = True
            rest = [a for a in get_args(ann) if a is not type(None)]
            ann = rest[0] if len(rest) == 1 else Any
        else:
            break
    origin = get_origin(ann)
    if origin is Literal and all(isinstance(a, str) for a in get_args(ann)):
        kind, choices = "str", tuple(get_args(ann))
    elif ann in _KINDS:
        kind = _KINDS[ann]
    elif origin is tuple and len(get_args(ann)) == 2 and get_args(ann)[1] is Ellipsis:
        item = get_args(ann)[0]
        kind = {float: "float-list", int: "int-list"}.get(item, "any")
    else:
        kind = "any"
    required = default is inspect.Parameter.empty
    return ParamSpec(
        name=name,
        kind=kind,
        optional=optional,
        required=required,
        default=None if required else default,
        choices=choices,
        range=rng,
    )


@cache
def param_specs(cls: type) -> tuple[ParamSpec, ...]:
    """The hyper-parameters of policy class ``cls``, in signature order."""
    init = cls.__init__  # type: ignore[misc]
    if init is object.__init__:
        return ()
    hints = get_type_hints(init, include_extras=True)
    specs = []
    for p in list(inspect.signature(init).parameters.values())[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        specs.append(_describe(p.name, hints.get(p.name, Any), p.default))
    return tuple(specs)


def check_params(cls: type, params: Mapping[str, Any], where: str = "params") -> list[str]:
    """Problems with ``params`` for policy class ``cls``, each naming ``where.<name>``."""
    specs = {s.name: s for s in param_specs(cls)}
    errors = []
    for key, value in params.items():
        spec = specs.get(key)
        if spec is None:
            errors.append(f"{where}.{key}: {unknown_parameter(cls, key)}")
            continue
        try:
            spec.check(value)
        except ValueError as exc:
            errors.append(f"{where}.{key}: {exc}")
    for spec in specs.values():
        if spec.required and spec.name not in params:
            errors.append(f"{where}.{spec.name}: required")
    return errors


def unknown_parameter(cls: type, *keys: Any) -> str:
    """What to say of parameters ``keys`` that policy class ``cls`` does not take, e.g.
    ``fifo takes no parameter 'nonsense'; it takes: backfill``."""
    name = getattr(cls, "name", cls.__name__)
    names = [s.name for s in param_specs(cls)]
    shown = ", ".join(_show(k) for k in keys)
    if not names:
        return f"{name} takes no parameters (got {shown})"
    word = "parameter" if len(keys) == 1 else "parameters"
    return f"{name} takes no {word} {shown}; it takes: {', '.join(names)}"


def unknown_parameters(cls: type, params: Mapping[str, Any]) -> str | None:
    """What is wrong with the names of ``params`` for policy class ``cls`` (names it does not
    take, required ones left out), or ``None``."""
    specs = {s.name: s for s in param_specs(cls)}
    unknown = [k for k in params if k not in specs]
    missing = [s.name for s in specs.values() if s.required and s.name not in params]
    parts = [unknown_parameter(cls, *unknown)] if unknown else []
    if missing:
        name = getattr(cls, "name", cls.__name__)
        parts.append(f"{name} needs {', '.join(map(repr, missing))}")
    return "; ".join(parts) or None


def normalised(cls: type, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` (already checked) with each value normalised by its spec."""
    specs = {s.name: s for s in param_specs(cls)}
    return {k: specs[k].check(v) for k, v in params.items()}


def policy_errors(name: Any, params: Any, where: str) -> list[str]:
    """Problems with one ``{"name", "params"}`` choice (unknown policy, parameters that are
    not an object, unknown, missing, ill-typed or out-of-range parameters, or a constructor
    that refuses them), each naming ``where`` or ``where.params.<name>``; empty when fine."""
    from scheduling.registry import POLICIES

    if not isinstance(name, str) or name not in POLICIES:
        return [f"{where}.name: unknown policy {_show(name)}; known: {', '.join(sorted(POLICIES))}"]
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        return [f"{where}.params: must be an object of parameter values, got {_show(params)}"]
    cls = POLICIES[name]
    errors = check_params(cls, params, f"{where}.params")
    if errors:
        return errors
    try:
        cls(**as_arguments(normalised(cls, params)))
    except (TypeError, ValueError) as exc:
        return [f"{where}.params: {exc}"]
    return []


def policies_errors(items: Sequence[Any], where: str = "policies") -> list[str]:
    """:func:`policy_errors` of every item of a list of ``{"name", "params"}`` objects."""
    errors: list[str] = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            errors.append(f"{where}[{i}]: must be an object with a name and params")
            continue
        errors += policy_errors(item.get("name"), item.get("params"), f"{where}[{i}]")
    return errors


def checks_cluster(name: str) -> bool:
    """Whether the policy registered as ``name`` checks its parameters against a cluster
    (:meth:`scheduling.base.Policy.cluster_problems`), e.g. a power budget."""
    from scheduling.base import Policy
    from scheduling.registry import POLICIES

    cls = POLICIES.get(name)
    return cls is not None and cls.cluster_problems.__func__ is not Policy.cluster_problems.__func__  # type: ignore[attr-defined]


def cluster_errors(name: str, params: Mapping[str, Any], cluster: Any, where: str) -> list[str]:
    """Problems of policy ``name`` with ``params`` (already checked) on ``cluster``, each
    naming ``where.<parameter>`` (e.g. ``policies[0].params.budget_kw: ...``)."""
    from scheduling.registry import POLICIES

    cls = POLICIES.get(name)
    if cls is None:
        return []
    return [f"{where}.{p}" for p in cls.cluster_problems(normalised(cls, params), cluster)]


def as_arguments(params: Mapping[str, Any]) -> dict[str, Any]:
    """JSON parameter values as constructor arguments (lists become tuples)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}

"""The policy catalogue: what each registered policy is and which hyper-parameters it takes.

Everything is read from the registry (class attributes, docstring, ``__init__`` signature
through :mod:`scheduling.params`, which also checks the values an experiment gives); nothing
here knows a policy by name.
"""

from __future__ import annotations

import inspect
import re
from functools import cache
from typing import Any

_SECTION = re.compile(r"^\s*([A-Z][A-Za-z ]+)\n\s*-{3,}\s*$", re.MULTILINE)


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    return value


def _sections(doc: str) -> tuple[str, dict[str, str]]:
    """Split a numpydoc docstring: the text before the first section, and parameter texts."""
    doc = inspect.cleandoc(doc or "")
    parts = _SECTION.split(doc)
    head = parts[0].strip()
    params: dict[str, str] = {}
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        if title.strip() != "Parameters":
            continue
        current = None
        for line in body.splitlines():
            if line and not line[0].isspace():
                current = line.split(":")[0].strip()
                params[current] = ""
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
    return head, params


def describe(cls: type) -> dict[str, Any]:
    """Catalogue entry of one policy or placement class."""
    head, param_docs = _sections(cls.__doc__ or "")
    from scheduling.params import param_specs

    parameters = [
        {
            "name": p.name,
            "type": p.type_name,
            "default": _jsonable(p.default),
            "required": p.required,
            "description": param_docs.get(p.name, ""),
            "choices": list(p.choices) if p.choices is not None else None,
            "minimum": p.range.minimum if p.range is not None else None,
            "exclusive_minimum": bool(p.range is not None and p.range.exclusive),
        }
        for p in param_specs(cls)
    ]
    summary = head.split("\n\n")[0].replace("\n", " ").strip()
    return {
        "name": cls.name,  # type: ignore[attr-defined]
        "summary": summary,
        "description": head,
        "citation": getattr(cls, "citation", ""),
        "preemptive": bool(getattr(cls, "preemptive", False)),
        "round_s": getattr(cls, "round_s", None),
        "parameters": parameters,
        "compat": sorted(getattr(cls, "compat", {}) or {}),
        "uses_seed": bool(getattr(cls, "uses_seed", False)),
    }


@cache
def policies() -> tuple[dict[str, Any], ...]:
    from scheduling.registry import POLICIES

    return tuple(describe(cls) for cls in POLICIES.values())


@cache
def placements() -> tuple[dict[str, Any], ...]:
    from scheduling.registry import PLACEMENTS

    out = []
    for cls in PLACEMENTS.values():
        entry = describe(cls)
        out.append({k: entry[k] for k in ("name", "summary", "description", "uses_seed")})
    return tuple(out)

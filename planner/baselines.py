"""Which run is "the same run without shifting" of a carbon- or power-aware run.

The rule (``docs/carbon.md``, "Savings against a baseline"): a run of a wrapping policy
(``carbon-wait``, ``carbon-suspend``, ``carbon-region``, ``power-down``, ``power-cap``,
``energy-aware``, ``comm-wait``: it names a ``base`` policy, or takes its default) has as
baseline a run of that base policy, alone (no ``base`` of its own), on the same cluster,
workload and load factor, with the same seed, or a seed-independent one (run once for all
seeds). Among several, the one of the same seed, then the lowest id. A caller may instead
name one run as the baseline of all the others.

Nothing here re-simulates: the savings are :func:`clustersim.metrics.carbon_savings` of the
two stored summaries.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from typing import Any


def base_policy(policy: str, params: dict[str, Any] | None) -> str | None:
    """The base policy a run's policy wraps (its ``base`` parameter, else that parameter's
    default), or ``None`` for a policy that wraps none (or an unknown one)."""
    from scheduling.registry import POLICIES

    cls = POLICIES.get(policy)
    if cls is None or not getattr(cls, "wraps", False):
        return None
    base = (params or {}).get("base")
    if base:
        return str(base)
    param = inspect.signature(cls.__init__).parameters.get("base")
    if param is None or param.default is inspect.Parameter.empty:
        return None
    return str(param.default)


def find_baseline(run: Any, candidates: Iterable[Any]) -> Any | None:
    """The baseline of ``run`` among ``candidates`` (runs with ``policy``, ``params``,
    ``cluster_id``, ``workload_id``, ``load_factor``, ``seed``, ``seed_independent``), by
    the module's rule; ``None`` when ``run`` wraps no policy or none qualifies."""
    base = base_policy(run.policy, run.params)
    if base is None:
        return None
    found = [
        c
        for c in candidates
        if c.pk != run.pk
        and c.policy == base
        and not (c.params or {}).get("base")
        and c.cluster_id == run.cluster_id
        and c.workload_id == run.workload_id
        and c.load_factor == run.load_factor
        and (c.seed == run.seed or c.seed_independent)
    ]
    if not found:
        return None
    return min(found, key=lambda c: (c.seed != run.seed, c.pk))


def savings(runs: Sequence[Any], baseline: Any | None = None) -> list[dict[str, Any]]:
    """The carbon each run saved against its baseline and the JCT it cost.

    ``baseline``: one run to compare every other run with (the caller's choice); ``None``:
    each run's baseline among ``runs`` by the module's rule. Runs without a baseline, or
    whose run or baseline has no summary, are left out.

    Returns
    -------
    list of dict
        ``run``, ``baseline`` (ids), ``baseline_policy`` and the keys of
        :func:`clustersim.metrics.carbon_savings`.
    """
    from clustersim.metrics import carbon_savings

    out = []
    for r in runs:
        b = find_baseline(r, runs) if baseline is None else baseline
        if b is None or b.pk == r.pk or not r.summary or not b.summary:
            continue
        out.append(
            {
                "run": r.pk,
                "baseline": b.pk,
                "baseline_policy": b.policy,
                **carbon_savings(r.summary, b.summary),
            }
        )
    return out

"""The experiment page's side by side of "as run today" against research policies.

One policy of the experiment is the baseline — by default the first that models a production
scheduler (:data:`PRODUCTION`), else the first listed — and every other policy's key metrics
are shown as the change from it, per configuration, with whether the change is better or
worse for that metric. Means over seeds, as in the metric table.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dashboard.figures import METRICS, NO_RUNS
from dashboard.numbers import mean_spread
from dashboard.plotting import Chart, colours, empty, finite_or_none
from dashboard.results import Grid

#: Policies that model a scheduler operators run today (``docs/production-schedulers.md``).
PRODUCTION = ("slurm", "yarn-capacity", "kubernetes")
#: The metrics of the side by side.
VERSUS_METRICS = (
    "jct_mean_s",
    "jct_p99_s",
    "wait_mean_s",
    "utilisation",
    "jain_index",
    "cost_owned_usd",
    "energy_kwh",
    "carbon_kg",
)


def default_baseline(grid: Grid) -> str | None:
    """The label of the first policy modelling a production scheduler, else the first."""
    if not grid.policies:
        return None
    names = {p: _policy_name(grid, p) for p in grid.policies}
    for label in grid.policies:
        if names[label] in PRODUCTION:
            return label
    return grid.policies[0]


def _policy_name(grid: Grid, label: str) -> str:
    for (p, _), runs in grid.cells.items():
        if p == label and runs:
            return str(runs[0].policy)
    return label


def change(base: float | None, other: float | None, higher_is_better: bool) -> str:
    """The change from ``base`` to ``other`` in words: ``"−42.0 % (better)"``; ``"–"`` when
    either is unknown, ``"same"`` when equal, and the difference itself when the base is 0."""
    if base is None or other is None:
        return "–"
    if other == base:
        return "same"
    better = (other > base) == higher_is_better
    word = "better" if better else "worse"
    if base == 0:
        return f"{other - base:+.3g} ({word})"
    pct = 100.0 * (other - base) / abs(base)
    return f"{pct:+.1f} % ({word})".replace("-", "−")


def versus_table(grid: Grid, baseline: str | None) -> Chart:
    """Every other policy against ``baseline`` (a policy label; ``None`` or unknown: the
    default), per configuration."""
    title = "As run today vs research policies (change from the baseline policy)"
    if not grid.runs:
        return empty(title, NO_RUNS)
    if len(grid.policies) < 2:
        return empty(title, "The side by side needs at least two policies with finished runs.")
    base = baseline if baseline in grid.policies else default_baseline(grid)
    assert base is not None
    columns: list[dict[str, Any]] = [
        {"key": "policy", "label": "Policy"},
        {"key": "config", "label": "Configuration"},
    ]
    columns += [
        {"key": k, "label": METRICS[k].short or METRICS[k].label, "help": METRICS[k].label}
        for k in VERSUS_METRICS
    ]
    colour = colours(grid.policies)  # each policy's colour in every chart of the page
    rows: list[dict[str, Any]] = []
    export: list[dict[str, Any]] = []
    for config in grid.configs:
        base_runs = grid.cells.get((base, config))
        if not base_runs:
            continue
        base_mean = {k: _mean(base_runs, k) for k in VERSUS_METRICS}
        for policy in grid.policies:
            runs = grid.cells.get((policy, config))
            if policy == base or not runs:
                continue
            row: dict[str, Any] = {
                "policy": policy,
                "colour": colour[policy],
                "config": grid.config_label(config),
                "group": config.key,
            }
            flat: dict[str, Any] = {
                "policy": policy,
                "baseline": base,
                "cluster": config.cluster,
                "workload": config.workload,
                "load_factor": config.load,
            }
            for k in VERSUS_METRICS:
                m = _mean(runs, k)
                row[k] = change(base_mean[k], m, METRICS[k].higher_is_better)
                flat[k] = m
                flat[f"{k}_baseline"] = base_mean[k]
            rows.append(row)
            export.append(flat)
    if not rows:
        return empty(title, f"No configuration has runs of both {base} and another policy.")
    return Chart(
        title=title,
        table={"columns": columns, "rows": rows},
        data=pd.DataFrame(export),
        note=f"Baseline: {base}. Means over seeds; “better” follows each metric's direction.",
    )


def _mean(runs: Any, key: str) -> float | None:
    mean, _, _ = mean_spread([finite_or_none((r.summary or {}).get(key)) for r in runs])
    return mean

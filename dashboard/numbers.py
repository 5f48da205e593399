"""How the summary numbers of a grid cell are shown: exact counts, mean ± spread over seeds.

A grid cell (policy × cluster × workload × load factor) holds one run per seed, or one run
marked ``seed_independent`` that stands for every seed (:mod:`planner.services`). What a
table shows for it:

* a count (jobs, preemptions, migrations: :func:`is_count`) is an exact integer, never a mean
  and never rounded; when the seeds' runs disagree, the range ``lo–hi`` of their values. Runs
  are never pooled: a cell of three seeds of an 82,247-job trace shows 82,247 jobs;
* any other metric is the mean over the seeds' runs, with the sample standard deviation only
  when there is a spread: one run, or runs that agree exactly, show the value alone (no
  "± 0").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dashboard.plotting import finite_or_none, mean_sd, rounded

#: Summary keys that count things (besides every ``jobs_*`` key).
COUNT_KEYS = frozenset(
    {
        "preemptions",
        "migrations",
        "node_failures",
        "restarts",
        "slow_nodes",
        "spot_reclaims",
        "spot_restarts",
        "spot_restarts_saved_by_notice",
        "spot_jobs_restarted",
        "gpu_shared_jobs",
        "gpu_share_peak_milli",
        "gpu_share_rerates",
    }
)

#: What the page says of a cell run once because its results do not depend on the seed.
RUN_ONCE = "run once: does not depend on the seed"


def is_count(key: str) -> bool:
    """Whether summary ``key`` counts things (shown as an exact integer)."""
    return key.startswith("jobs_") or key in COUNT_KEYS


def count_value(values: Sequence[Any]) -> int | str | None:
    """A count over a cell's runs: the exact integer, ``"lo–hi"`` when the runs disagree,
    ``None`` when no run has it."""
    known = [round(v) for v in (finite_or_none(x) for x in values) if v is not None]
    if not known:
        return None
    lo, hi = min(known), max(known)
    return lo if lo == hi else f"{lo:,}–{hi:,}"


def mean_spread(
    values: Sequence[Any], factor: float = 1.0
) -> tuple[float | None, float | None, int]:
    """Mean, sample standard deviation and number of the known values, times ``factor``;
    the deviation is ``None`` for one value or values that agree exactly."""
    known = [v for v in (finite_or_none(x) for x in values) if v is not None]
    mean, sd, n = mean_sd(known)
    if mean is None:
        return None, None, 0
    if sd is not None and max(known) == min(known):
        sd = None
    return mean * factor, None if sd is None else sd * factor, n


def cell_value(key: str, values: Sequence[Any], factor: float = 1.0, digits: int = 4) -> Any:
    """What a table cell shows for ``key`` over a cell's runs: an exact count (or range), or
    ``[mean, sd]`` to ``digits`` significant digits (``sd`` ``None`` without a spread)."""
    if is_count(key):
        return count_value(values)
    mean, sd, _ = mean_spread(values, factor)
    return rounded([mean, sd], digits)


def seeds_text(
    runs: Sequence[Any], sd: float | None = None, unit: str = "", seeds_listed: int = 1
) -> str:
    """How many seeds a cell's value stands for, and its spread (bar hover texts); a cell run
    once for several seeds listed says so."""
    if seeds_listed > 1 and len(runs) == 1 and getattr(runs[0], "seed_independent", False):
        return RUN_ONCE
    n = len(runs)
    if n == 1:
        return "1 seed"
    if sd is None:
        return f"the same for all {n} seeds"
    return f"± {sd:.2g} {unit} (sd over {n} seeds)".replace("  ", " ")

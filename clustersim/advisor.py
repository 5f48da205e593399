"""Capacity advisor: which inventory to buy or rent, searched with the simulator in the loop.

A planner states a *problem* (:class:`Problem`): the decision space, what to optimise and what
must hold; the advisor proposes inventories, simulates each on the workload, and answers with
the Pareto front, a recommendation, its margins and its sensitivity (:class:`Answer`).

Decision space
    One :class:`TypeRange` per accelerator type (catalog name or alias): a count of *nodes*
    from ``min_nodes`` to ``max_nodes`` in steps of ``step`` (one buys whole servers), the node
    shape (``devices_per_node``), the region its nodes draw power from (a region of the base
    spec, for its carbon intensity), and its prices (``purchase_usd`` and
    ``amortisation_years`` per device when owned, ``price_per_hour`` per device-hour when
    rented; ``None`` keeps the catalog's). A candidate is one node count per type; its cluster
    is the base spec (``Problem.base_spec``, whose pools are always there; ``None`` for a
    green field) plus one new pool per type with a non-zero count
    (:func:`clustersim.variants.add_pool`), with the price overrides written into the spec's
    ``accelerators`` (:func:`clustersim.variants.price_override`) so that the simulator's own
    cost metrics use them.

Metrics
    Every numeric key of :func:`clustersim.metrics.summary` (``jct_p95_s``, ``carbon_kg``,
    ``cost_usd``, ``utilisation``, ...), plus the *static* metrics of the added inventory,
    known without simulating (:func:`static_metrics`): ``capital_usd`` (purchase price of the
    added devices), ``hourly_usd`` (their cost per hour: purchase amortised over
    ``amortisation_years`` of 8,760 hours, or the rental price per device-hour when the study
    rents, ``Problem.rent``), ``devices`` and ``nodes`` (added). :data:`METRICS` lists the
    names a problem may use; :data:`SENSE` says which way each is better.

    The owned cost ``cost_usd`` is taken over one cost horizon for every candidate:
    ``Problem.horizon_hours``, or by default the arrival span of the workload at load factor 1
    (:func:`clustersim.metrics.cost_horizon`'s rule), so that a growth step at load 1.3 is
    priced over the same period as the base.

Evaluation (:func:`evaluate`)
    A candidate runs under every policy of the problem and every seed, on the workload scaled
    by the load factor (:func:`clustersim.transform.scale_load`), to completion. A metric is
    the mean over seeds; across policies the *worst* value is kept (the largest of a metric
    that is better small, the smallest of one better large), so a recommendation holds
    whichever of the selected policies the cluster runs; the values per policy are kept too.
    A candidate on which any job is dropped (a gang larger than every node of its type, no
    device type the job can use, CPU or memory it cannot have) is infeasible: a cluster that
    cannot run part of the workload is not an answer to "what should we buy".

Constraints and budgets
    ``metric <= bound`` or ``metric >= bound`` (:class:`Constraint`). A budget is a constraint
    on a static metric (``capital_usd <= 2e6``, ``hourly_usd <= 300``); a candidate that breaks
    a constraint on static metrics only is settled without simulating (status ``"static"``).
    A constraint's *margin* is ``(bound - value) / |bound|`` for ``<=`` and
    ``(value - bound) / |bound|`` for ``>=`` (positive: holds with room to spare); its
    violation is ``max(0, -margin)``.

Search (:class:`Search`)
    Why Optuna: a maintained library with multi-objective, constrained samplers and an
    ask-and-tell interface, so the study's state can live in the project's own tables (each
    finished evaluation a row) instead of Optuna's SQLAlchemy storage; TPE rather than
    NSGA-II because budgets here are tens to a hundred evaluations, too few generations for
    a genetic algorithm. When the grid has no more points than the evaluation budget,
    every point is evaluated (exhaustive, in lexicographic order). Otherwise Optuna's TPE
    sampler (multi-objective, with Optuna's constraint handling: each constraint's relative
    violation is one of the trial's constraint values, one more says whether jobs were
    dropped) proposes candidates in batches. Determinism: each batch is asked from a fresh
    sampler seeded with ``(seed, number of evaluations so far)`` over the finished evaluations
    re-added in the order they were asked. The proposals are therefore a function of the
    finished evaluations only: they do not depend on which worker ran what, and a study
    resumed from its stored evaluations proposes what it would have proposed uninterrupted.
    A proposal that repeats an evaluated candidate or breaks a static constraint costs no
    simulation: the second is told to the sampler as infeasible (so it learns), the first
    is skipped; after :data:`MAX_PROPOSALS` fruitless proposals a batch is filled with
    unevaluated grid points drawn by a generator seeded the same way.

Successive halving (early stopping)
    A candidate is first simulated on the first ``prefix`` fraction of the jobs (by submit
    time). It stops there (status ``"pruned"``) when the prefix already breaks a ``<=``
    constraint on a queueing metric (``jct_*``, ``queue_delay_*``, ``wait_*``,
    ``makespan_s``) by more than ``prune_slack`` (relative), or drops a job. A prefix of a
    workload has the queue of the full one's beginning, not its end, so on a cluster that
    cannot keep up the prefix's JCTs are the smaller ones: the prefix is an optimistic
    estimate of those metrics, and one far beyond the bound is hopeless. This is a heuristic
    (a workload whose tail is lighter than its head breaks it); ``prefix=1`` turns it off.

Answer (:meth:`Search.answer`)
    The Pareto front over the objectives among fully simulated feasible candidates (all
    fully simulated ones when none is feasible); the recommendation: the feasible candidate
    best in the first objective, ties broken by the next objectives, then by fewer devices;
    its margin to each constraint; when none is feasible, ``infeasible`` and the closest
    candidates by total violation. :func:`sensitivity` simulates the recommendation with one
    step more and one step fewer of each type; :func:`why` says where the work ran.

Growth (:func:`growth_plan`)
    For load factors ``L_1, L_2, ...`` (e.g. +30 % per quarter: 1.3, 1.69, ...), the first
    step at which the current inventory stops meeting the constraints, and at each step the
    cheapest expansion that meets them again (a search whose lower bounds are the counts
    bought so far): a purchase plan.

Departures from a full treatment: the front is over the objectives' worst case across
policies (a planner who will run one policy should select one); seeds average, they do not
give a confidence interval; the prefix rule is the heuristic above, not a bound; a type's
spot share is fixed by the problem, not searched (compare shares with two type ranges or two
studies); spot nodes are reclaimed at :mod:`clustersim.spot`'s default rates.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from clustersim.errors import SpecError
from clustersim.jobs import JobTable

#: Hours per year of amortisation (:attr:`clustersim.cluster.AcceleratorType.capital_per_hour`).
HOURS_PER_YEAR = 8760.0

#: Metrics computed from the added inventory, without simulating (:func:`static_metrics`).
STATIC_METRICS: tuple[str, ...] = ("capital_usd", "hourly_usd", "devices", "nodes")

#: Which way each metric is better: ``"min"`` or ``"max"``. A summary key not listed here is
#: better small unless it names a share, an index or work per unit (see :func:`sense`).
SENSE: dict[str, str] = {
    "utilisation": "max",
    "jain_index": "max",
    "deadline_met_share": "max",
    "ftf_share_le_1": "max",
    "work_per_dollar": "max",
    "work_per_dollar_cloud": "max",
    "reference_gpu_hours_completed": "max",
    "jobs_completed": "max",
    "spot_savings_usd": "max",
}

#: Metrics a problem may name: the static ones and the summary's usual numeric keys (a key
#: of a model that is off, e.g. ``failures``, is not offered; ``utilisation_<type>`` is
#: accepted for any type).
METRICS: tuple[str, ...] = (
    *STATIC_METRICS,
    "jct_mean_s",
    "jct_p50_s",
    "jct_p95_s",
    "jct_p99_s",
    "queue_delay_mean_s",
    "queue_delay_p50_s",
    "queue_delay_p95_s",
    "queue_delay_p99_s",
    "wait_mean_s",
    "wait_p95_s",
    "makespan_s",
    "utilisation",
    "busy_device_hours",
    "idle_while_queued",
    "jain_index",
    "ftf_rho_max",
    "ftf_rho_mean",
    "deadline_met_share",
    "preemptions",
    "energy_kwh",
    "peak_power_kw",
    "carbon_kg",
    "electricity_cost_usd",
    "cost_usd",
    "cost_owned_usd",
    "cost_owned_capital_usd",
    "cost_cloud_usd",
    "work_per_dollar",
    "work_per_dollar_cloud",
)

#: Queueing metrics the successive-halving rule may stop on (module docstring).
_PRUNABLE = re.compile(r"^(jct|queue_delay|wait)_(mean|p\d+)_s$|^makespan_s$")

#: Proposals tried per batch before filling it with random unevaluated grid points.
MAX_PROPOSALS = 64

#: A metric value told to the sampler for a candidate that has none (no job completed, or a
#: candidate settled without simulating): larger than any real value of the study.
_PENALTY = 1e30


def sense(metric: str) -> str:
    """``"max"`` if a larger value of ``metric`` is better, else ``"min"``."""
    if metric in SENSE or metric.startswith("utilisation_"):
        return SENSE.get(metric, "max")
    return "min"


def check_metric(name: str, field_name: str) -> str:
    """``name`` if a problem may use it, else a :class:`SpecError` naming ``field_name``."""
    if name in METRICS or re.fullmatch(r"utilisation_[a-z0-9_]+", name):
        return name
    raise SpecError(
        field_name, f"unknown metric {name!r}; metrics: {', '.join(METRICS)}, utilisation_<type>"
    )


# -- the problem --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TypeRange:
    """One accelerator type of the decision space (module docstring).

    Attributes
    ----------
    accelerator
        Catalog name or alias (or a type the base spec defines).
    max_nodes, min_nodes, step
        Node counts ``min_nodes, min_nodes + step, ..., <= max_nodes``.
    devices_per_node
        Node shape.
    region
        Region of the new pool (a region of the base spec); ``None``: the first.
    purchase_usd, amortisation_years, price_per_hour
        Per device; ``None`` keeps the catalog's.
    spot_share
        Share of the type's nodes rented as spot capacity (:func:`spot_nodes` of them): a
        spot pool at the default discount off ``price_per_hour``
        (:data:`clustersim.spot.DEFAULT_DISCOUNT`), reclaimed at the default rate while the
        candidate is simulated (:mod:`clustersim.spot`); never bought, so it adds to
        ``hourly_usd`` and not to ``capital_usd``.
    """

    accelerator: str
    max_nodes: int
    min_nodes: int = 0
    step: int = 1
    devices_per_node: int = 8
    region: str | None = None
    purchase_usd: float | None = None
    amortisation_years: float | None = None
    price_per_hour: float | None = None
    spot_share: float = 0.0

    def counts(self) -> tuple[int, ...]:
        """The node counts this type may take."""
        return tuple(range(self.min_nodes, self.max_nodes + 1, self.step))


@dataclass(frozen=True)
class Objective:
    """Optimise ``metric`` in direction ``sense`` (``"min"`` or ``"max"``)."""

    metric: str
    sense: str = "min"


@dataclass(frozen=True)
class Constraint:
    """``metric <= bound`` (``op="<="``) or ``metric >= bound`` (``op=">="``)."""

    metric: str
    op: str
    bound: float

    def margin(self, value: float | None) -> float:
        """Relative room to the bound (module docstring); ``-inf`` for a missing value."""
        if value is None or not math.isfinite(value):
            return -math.inf
        scale = abs(self.bound) if self.bound != 0 else 1.0
        room = self.bound - value if self.op == "<=" else value - self.bound
        return room / scale

    def violation(self, value: float | None) -> float:
        """``max(0, -margin)``; ``inf`` for a missing value."""
        return max(0.0, -self.margin(value))

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.bound:g}"


@dataclass(frozen=True)
class Problem:
    """What to decide, optimise and respect (module docstring).

    Attributes
    ----------
    types
        The decision space, one range per type.
    objectives
        At least one; the first decides the recommendation.
    constraints
        Must hold for a candidate to be feasible.
    policies, params
        Registered policy names, and hyper-parameters per policy name.
    seeds
        Simulation seeds (metrics are averaged over them).
    base_spec
        A cluster spec whose pools every candidate keeps; ``None``: nothing yet.
    load_factor
        Arrival-rate multiplier of the workload (:func:`clustersim.transform.scale_load`).
    horizon_hours
        Cost horizon; ``None``: the workload's arrival span at load 1.
    rent
        Price the added devices by the hour (``hourly_usd`` from ``price_per_hour``) instead
        of owning them (amortised purchase).
    prefix, prune_slack
        Successive halving: the fraction of jobs simulated first, and how far beyond a bound
        the prefix must be to stop (``prefix=1``: off).
    """

    types: tuple[TypeRange, ...]
    objectives: tuple[Objective, ...] = (Objective("cost_usd"), Objective("jct_p95_s"))
    constraints: tuple[Constraint, ...] = ()
    policies: tuple[str, ...] = ("fifo",)
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    seeds: tuple[int, ...] = (0,)
    base_spec: Mapping[str, Any] | None = None
    load_factor: float = 1.0
    horizon_hours: float | None = None
    rent: bool = False
    prefix: float = 0.25
    prune_slack: float = 0.25

    def grid_size(self) -> int:
        """How many candidates the decision space holds."""
        return math.prod(len(t.counts()) for t in self.types)

    def grid(self) -> Iterable[tuple[int, ...]]:
        """Every candidate, in lexicographic order."""
        return itertools.product(*(t.counts() for t in self.types))

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form (for a task queue or a database); :meth:`from_dict` inverts it."""
        out = asdict(self)
        out["params"] = {k: dict(v) for k, v in self.params.items()}
        out["base_spec"] = None if self.base_spec is None else dict(self.base_spec)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Problem:
        """The problem of :meth:`to_dict`'s output, validated (:func:`validate`)."""
        d = dict(data)
        problem = cls(
            types=tuple(TypeRange(**t) for t in d.pop("types")),
            objectives=tuple(Objective(**o) for o in d.pop("objectives")),
            constraints=tuple(Constraint(**c) for c in d.pop("constraints", ())),
            policies=tuple(d.pop("policies", ("fifo",))),
            seeds=tuple(int(s) for s in d.pop("seeds", (0,))),
            **d,
        )
        validate(problem)
        return problem


def validate(problem: Problem, catalog: Any = None) -> None:
    """Refuse a problem that cannot be searched, before anything is simulated.

    Raises
    ------
    SpecError
        Naming the field: an empty decision space, an unknown type or a type without a
        price, a count range that holds no count, an unknown metric or policy, contradictory
        constraints (``x <= a`` and ``x >= b`` with ``b > a``), a budget below the cheapest
        single node, an objective listed twice.
    """
    from clustersim.catalog import load_catalog
    from scheduling.registry import POLICIES

    cat = catalog if catalog is not None else _catalog(problem)
    if not problem.types:
        raise SpecError("types", "the decision space is empty: give at least one type")
    seen: set[str] = set()
    for i, t in enumerate(problem.types):
        at = f"types[{i}]"
        acc = cat.resolve(t.accelerator) or load_catalog().resolve(t.accelerator)
        if acc is None:
            raise SpecError(f"{at}.accelerator", cat.unknown_message(t.accelerator))
        if acc.name in seen:
            raise SpecError(f"{at}.accelerator", f"{acc.name} is listed twice")
        seen.add(acc.name)
        for name in ("min_nodes", "max_nodes", "step", "devices_per_node"):
            v = getattr(t, name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise SpecError(f"{at}.{name}", f"must be an integer, not {v!r}")
        if t.min_nodes < 0 or t.max_nodes < t.min_nodes:
            raise SpecError(f"{at}.max_nodes", "the count range must be 0 <= min <= max")
        if t.step < 1:
            raise SpecError(f"{at}.step", "must be at least 1")
        if not 1 <= t.devices_per_node <= 64:
            raise SpecError(f"{at}.devices_per_node", "must be in 1..64")
        for name in ("purchase_usd", "price_per_hour"):
            v = getattr(t, name)
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise SpecError(f"{at}.{name}", f"must be a non-negative number, not {v!r}")
        share = t.spot_share
        if not (isinstance(share, (int, float)) and 0 <= share <= 1):
            raise SpecError(f"{at}.spot_share", f"must be in 0..1, not {share!r}")
        years = t.amortisation_years
        if years is not None and not (isinstance(years, (int, float)) and years > 0):
            raise SpecError(f"{at}.amortisation_years", f"must be positive, not {years!r}")
        priced = _price(t, acc, problem.rent)
        if priced is None:
            what = "price_per_hour" if problem.rent else "purchase_usd"
            raise SpecError(f"{at}.{what}", f"{acc.name} has no price in the catalog: give {what}")
    if problem.grid_size() < 1 or all(t.max_nodes == 0 for t in problem.types):
        raise SpecError("types", "the decision space holds no inventory with any device")
    if not problem.objectives:
        raise SpecError("objectives", "give at least one objective")
    names = [o.metric for o in problem.objectives]
    for i, o in enumerate(problem.objectives):
        check_metric(o.metric, f"objectives[{i}].metric")
        if o.sense not in ("min", "max"):
            raise SpecError(f"objectives[{i}].sense", f"must be min or max, not {o.sense!r}")
        if names.count(o.metric) > 1:
            raise SpecError(f"objectives[{i}].metric", f"{o.metric} is listed twice")
    lows: dict[str, float] = {}
    highs: dict[str, float] = {}
    for i, c in enumerate(problem.constraints):
        check_metric(c.metric, f"constraints[{i}].metric")
        if c.op not in ("<=", ">="):
            raise SpecError(f"constraints[{i}].op", f"must be <= or >=, not {c.op!r}")
        if not (isinstance(c.bound, (int, float)) and math.isfinite(c.bound)):
            raise SpecError(f"constraints[{i}].bound", f"must be a number, not {c.bound!r}")
        if c.op == "<=":
            highs[c.metric] = min(highs.get(c.metric, math.inf), c.bound)
        else:
            lows[c.metric] = max(lows.get(c.metric, -math.inf), c.bound)
        if lows.get(c.metric, -math.inf) > highs.get(c.metric, math.inf):
            raise SpecError(
                f"constraints[{i}]",
                f"contradicts another constraint: {c.metric} >= {lows[c.metric]:g} and "
                f"<= {highs[c.metric]:g}",
            )
    cheapest = _cheapest_node(problem, cat)
    for i, c in enumerate(problem.constraints):
        if (
            c.op == "<="
            and c.metric in ("capital_usd", "hourly_usd")
            and problem.base_spec is None
            and c.bound < cheapest[c.metric]
        ):
            raise SpecError(
                f"constraints[{i}].bound",
                f"the budget {c.bound:g} is below the cheapest single node "
                f"({cheapest[c.metric]:g} {c.metric})",
            )
    if not problem.policies:
        raise SpecError("policies", "give at least one policy")
    for i, p in enumerate(problem.policies):
        if p not in POLICIES:
            raise SpecError(f"policies[{i}]", f"unknown policy {p!r}")
    if not problem.seeds:
        raise SpecError("seeds", "give at least one seed")
    if not (math.isfinite(problem.load_factor) and problem.load_factor > 0):
        raise SpecError("load_factor", "must be a positive number")
    if problem.horizon_hours is not None and not problem.horizon_hours > 0:
        raise SpecError("horizon_hours", "must be positive")
    if not 0 < problem.prefix <= 1:
        raise SpecError("prefix", "must be in (0, 1]")
    if not problem.prune_slack >= 0:
        raise SpecError("prune_slack", "must be >= 0")


def _catalog(problem: Problem) -> Any:
    from clustersim.catalog import load_catalog
    from clustersim.spec import _parse_accelerator

    cat = load_catalog()
    if problem.base_spec is not None and problem.base_spec.get("accelerators"):
        extra = [
            _parse_accelerator(a, f"base_spec.accelerators[{i}]")
            for i, a in enumerate(problem.base_spec["accelerators"])
        ]
        cat = cat.with_types(extra)
    return cat


def _price(t: TypeRange, acc: Any, rent: bool) -> float | None:
    """Per device: the purchase price (owned) or the price per hour (rented); ``None``: none."""
    if rent:
        if t.price_per_hour is not None:
            return float(t.price_per_hour)
        p = acc.price_per_hour
    else:
        if t.purchase_usd is not None:
            return float(t.purchase_usd)
        try:
            p = acc.capital_usd
        except (TypeError, ValueError):
            return None
    # a type defined without a price (0) has none: an explicit override may say 0
    return float(p) if p else None


def _cheapest_node(problem: Problem, cat: Any) -> dict[str, float]:
    capital = math.inf
    hourly = math.inf
    for t in problem.types:
        if t.max_nodes == 0:
            continue
        one = static_metrics(problem, _unit(problem, t), cat)
        capital = min(capital, one["capital_usd"])
        hourly = min(hourly, one["hourly_usd"])
    return {"capital_usd": capital, "hourly_usd": hourly}


def spot_nodes(t: TypeRange, n: int) -> int:
    """How many of ``n`` nodes of type ``t`` are spot: ``floor(n × spot_share + 0.5)``."""
    return math.floor(n * t.spot_share + 0.5) if t.spot_share > 0 else 0


def _unit(problem: Problem, t: TypeRange) -> tuple[int, ...]:
    return tuple(1 if x is t else 0 for x in problem.types)


def static_metrics(
    problem: Problem, counts: Sequence[int], catalog: Any = None
) -> dict[str, float]:
    """``capital_usd``, ``hourly_usd``, ``devices``, ``nodes`` of the devices ``counts`` adds."""
    cat = catalog if catalog is not None else _catalog(problem)
    capital = hourly = 0.0
    devices = nodes = 0
    for t, n in zip(problem.types, counts, strict=True):
        if n == 0:
            continue
        acc = cat.resolve(t.accelerator)
        d = n * t.devices_per_node
        devices += d
        nodes += n
        purchase = t.purchase_usd if t.purchase_usd is not None else acc.capital_usd
        years = t.amortisation_years if t.amortisation_years is not None else acc.amortisation_years
        rate = t.price_per_hour if t.price_per_hour is not None else acc.price_per_hour
        spot_d = spot_nodes(t, n) * t.devices_per_node
        if spot_d:
            from clustersim.spot import DEFAULT_DISCOUNT

            hourly += spot_d * float(rate) * (1.0 - DEFAULT_DISCOUNT)
            d -= spot_d
        if problem.rent:
            hourly += d * float(rate)
        else:
            capital += d * float(purchase)
            hourly += d * float(purchase) / (float(years) * HOURS_PER_YEAR)
    return {"capital_usd": capital, "hourly_usd": hourly, "devices": devices, "nodes": nodes}


def candidate_spec(problem: Problem, counts: Sequence[int], catalog: Any = None) -> dict[str, Any]:
    """The cluster spec of a candidate: the base plus one pool per type with nodes."""
    from clustersim.variants import add_pool, price_override

    spec: dict[str, Any] = (
        dict(problem.base_spec) if problem.base_spec is not None else {"name": "candidate"}
    )
    spec.setdefault("racks", [])
    spec.setdefault("pools", [])
    overrides: list[dict[str, Any]] = []
    labels: list[str] = []
    for t, n in zip(problem.types, counts, strict=True):
        if n == 0:
            continue
        prices = {
            "purchase_usd": t.purchase_usd,
            "amortisation_years": t.amortisation_years,
            "price_per_hour": t.price_per_hour,
        }
        if any(v is not None for v in prices.values()):
            entry = price_override(t.accelerator, prices)
            overrides.append(entry)
        pool = f"advised-{re.sub(r'[^a-z0-9]+', '-', t.accelerator.lower()).strip('-')}"
        n_spot = spot_nodes(t, n)
        if n - n_spot:
            spec = add_pool(
                spec,
                t.accelerator,
                (n - n_spot) * t.devices_per_node,
                t.devices_per_node,
                region=t.region,
                pool=pool,
                extra_types=overrides,
            ).spec
        if n_spot:
            spec = add_pool(
                spec,
                t.accelerator,
                n_spot * t.devices_per_node,
                t.devices_per_node,
                region=t.region,
                pool=f"{pool}-spot",
                extra_types=overrides,
            ).spec
            spec["pools"][-1]["spot"] = True
        labels.append(
            f"{t.accelerator}:{n}x{t.devices_per_node}" + (f" ({n_spot} spot)" if n_spot else "")
        )
    if overrides:
        known = {a.get("name") for a in spec.get("accelerators", [])}
        spec["accelerators"] = list(spec.get("accelerators", [])) + [
            o for o in overrides if o["name"] not in known
        ]
    base = problem.base_spec.get("name", "base") if problem.base_spec is not None else ""
    spec["name"] = " + ".join([x for x in [base, *labels] if x]) or "empty"
    if not spec["pools"]:
        raise SpecError("types", "this candidate has no devices")
    return spec


# -- evaluation ---------------------------------------------------------------------------------


@dataclass
class Evaluation:
    """One candidate's outcome.

    Attributes
    ----------
    counts
        Nodes per type, in the problem's type order.
    status
        ``"full"`` (simulated on the whole workload), ``"pruned"`` (stopped after the prefix),
        ``"static"`` (settled by a static constraint, not simulated), ``"empty"`` (no device).
    fraction
        Share of the jobs simulated (1 for full, ``prefix`` for pruned, 0 otherwise).
    metrics
        Aggregated values (module docstring); static metrics included.
    per_policy
        Metric values per policy (means over seeds).
    feasible
        Every constraint holds and no job was dropped.
    margins
        Constraint (its ``str``) -> relative margin.
    why
        :func:`why`'s table for a full evaluation (first policy, first seed).
    cpu_s
        Simulation CPU seconds.
    """

    counts: tuple[int, ...]
    status: str
    fraction: float
    metrics: dict[str, float | None]
    per_policy: dict[str, dict[str, float | None]] = field(default_factory=dict)
    feasible: bool = False
    margins: dict[str, float] = field(default_factory=dict)
    why: dict[str, Any] | None = None
    cpu_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["counts"] = list(self.counts)
        out["margins"] = {k: _json_num(v) for k, v in self.margins.items()}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evaluation:
        d = dict(data)
        d["counts"] = tuple(int(x) for x in d["counts"])
        d["margins"] = {k: (-math.inf if v is None else v) for k, v in d["margins"].items()}
        return cls(**d)


def _json_num(v: float) -> float | None:
    return v if math.isfinite(v) else None


def prefix_jobs(jobs: JobTable, fraction: float) -> JobTable:
    """The first ``ceil(fraction × n)`` jobs by submit time (ties by row)."""
    if fraction >= 1:
        return jobs
    n = max(1, math.ceil(fraction * len(jobs)))
    order = np.argsort(jobs.submit_time, kind="stable")[:n]
    return jobs.take(np.sort(order))


def workload_horizon_s(jobs: JobTable) -> float:
    """The default cost horizon: the arrival span at load 1 (at least one hour)."""
    from clustersim.metrics import MIN_HORIZON_S

    if len(jobs) == 0:
        return MIN_HORIZON_S
    span = float(jobs.submit_time.max() - jobs.submit_time.min())
    return max(span, MIN_HORIZON_S)


def _simulate(
    problem: Problem,
    jobs: JobTable,
    spec: Mapping[str, Any],
    policy: str,
    seed: int,
    horizon_s: float,
) -> tuple[dict[str, Any], Any]:
    from clustersim.compat import prepare
    from clustersim.engine import EngineOptions, simulate
    from clustersim.metrics import summary
    from clustersim.spec import cluster_from_spec

    cluster = cluster_from_spec(spec)
    params = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in dict(problem.params.get(policy, {})).items()
    }
    run = prepare(jobs, cluster, policy, params)
    spot = None
    if any(p.get("spot") for p in spec.get("pools", [])):  # reclaims at the pools' rates
        from clustersim.spot import from_settings

        spot = from_settings({})
    result = simulate(
        run.jobs,
        cluster,
        run.policy,
        run.placement,
        rates=run.rates,
        options=EngineOptions(seed=seed, spot=spot, **run.engine),
    )
    return dict(summary(result, horizon_s=horizon_s)), result


def _worse(metric: str, values: list[float | None]) -> float | None:
    """The worst of ``values`` for ``metric`` (``None`` if any is missing)."""
    if any(v is None for v in values):
        return None
    nums = [float(v) for v in values if v is not None]
    return max(nums) if sense(metric) == "min" else min(nums)


def _status_static(problem: Problem, static: Mapping[str, float]) -> bool:
    """Whether a constraint on a static metric alone already fails."""
    return any(
        c.metric in STATIC_METRICS and c.violation(static[c.metric]) > 0
        for c in problem.constraints
    )


def evaluate(
    problem: Problem,
    jobs: JobTable,
    counts: Sequence[int],
    *,
    fraction: float = 1.0,
    horizon_s: float | None = None,
    with_why: bool = True,
) -> Evaluation:
    """Simulate one candidate (module docstring) on the first ``fraction`` of ``jobs``.

    ``jobs`` is the workload at load factor 1; the problem's load factor is applied here.
    ``horizon_s`` defaults to the problem's, else :func:`workload_horizon_s` of ``jobs``.
    A candidate broken by a static constraint is not simulated (status ``"static"``).
    """
    import time

    from clustersim.transform import scale_load

    counts = tuple(int(c) for c in counts)
    cat = _catalog(problem)
    static = static_metrics(problem, counts, cat)
    if problem.base_spec is None and static["devices"] == 0:
        return _finish(problem, Evaluation(counts, "empty", 0.0, dict(static)))
    if _status_static(problem, static):
        return _finish(problem, Evaluation(counts, "static", 0.0, dict(static)))
    if horizon_s is None:
        horizon_s = (
            problem.horizon_hours * 3600.0
            if problem.horizon_hours is not None
            else workload_horizon_s(jobs)
        )
    spec = candidate_spec(problem, counts, cat)
    work = jobs if problem.load_factor == 1 else scale_load(jobs, problem.load_factor).jobs
    work = prefix_jobs(work, fraction)
    t0 = time.process_time()
    per_policy: dict[str, dict[str, float | None]] = {}
    dropped = 0
    first_result = None
    for policy in problem.policies:
        rows = []
        for seed in problem.seeds:
            out, result = _simulate(problem, work, spec, policy, seed, horizon_s)
            if first_result is None:
                first_result = result
            dropped = max(dropped, int(out.get("jobs_dropped") or 0))
            rows.append(out)
        per_policy[policy] = {
            k: _mean([r.get(k) for r in rows])
            for k in rows[0]
            if isinstance(rows[0][k], (int, float, type(None))) and not isinstance(rows[0][k], bool)
        }
    metrics: dict[str, float | None] = dict(static)
    keys = set().union(*(p.keys() for p in per_policy.values()))
    for k in sorted(keys):
        metrics[k] = _worse(k, [p.get(k) for p in per_policy.values()])
    metrics["jobs_dropped"] = float(dropped)
    status = "full" if fraction >= 1 else "prefix"
    ev = Evaluation(counts, status, float(min(fraction, 1.0)), metrics, per_policy)
    ev.cpu_s = time.process_time() - t0
    if with_why and status == "full" and first_result is not None:
        ev.why = why(first_result)
    return _finish(problem, ev)


def _mean(values: list[Any]) -> float | None:
    if any(v is None for v in values):
        return None
    return float(np.mean([float(v) for v in values]))


def _finish(problem: Problem, ev: Evaluation) -> Evaluation:
    ev.margins = {str(c): c.margin(ev.metrics.get(c.metric)) for c in problem.constraints}
    ev.feasible = (
        ev.status == "full"
        and not ev.metrics.get("jobs_dropped")
        and all(m >= 0 for m in ev.margins.values())
    )
    return ev


def hopeless(problem: Problem, ev: Evaluation) -> bool:
    """Whether a prefix evaluation already rules the candidate out (module docstring)."""
    if ev.metrics.get("jobs_dropped"):
        return True
    for c in problem.constraints:
        if c.op == "<=" and _PRUNABLE.match(c.metric):
            v = ev.metrics.get(c.metric)
            if v is not None and c.violation(v) > problem.prune_slack:
                return True
    return False


def evaluate_halving(problem: Problem, jobs: JobTable, counts: Sequence[int]) -> Evaluation:
    """:func:`evaluate` with successive halving: the prefix first, the rest if not hopeless."""
    horizon_s = (
        problem.horizon_hours * 3600.0
        if problem.horizon_hours is not None
        else workload_horizon_s(jobs)
    )
    if problem.prefix < 1:
        first = evaluate(problem, jobs, counts, fraction=problem.prefix, horizon_s=horizon_s)
        if first.status in ("static", "empty"):
            return first
        if hopeless(problem, first):
            first.status = "pruned"
            return _finish(problem, first)
        full = evaluate(problem, jobs, counts, horizon_s=horizon_s)
        full.cpu_s += first.cpu_s
        return full
    return evaluate(problem, jobs, counts, horizon_s=horizon_s)


def why(result: Any) -> dict[str, Any]:
    """Where the work ran: utilisation per type, the queueing share of JCT, and the
    device-hours of each job type on each accelerator type (from the run's stints)."""
    from clustersim.metrics import summary

    cl = result.cluster
    jobs = result.jobs
    st = result.stints
    names = list(cl.type_names)
    node_type = cl.node_type[st.node] if len(st.node) else np.zeros(0, dtype=np.int64)
    dev_s = st.devices * (st.end - st.start)
    per_type_busy = np.bincount(node_type, weights=dev_s, minlength=len(names))
    out = dict(summary(result))
    span = float(out.get("window_s") or 0.0)
    devices = np.bincount(cl.node_type, weights=cl.node_devices, minlength=len(names))
    util = {
        n: (float(per_type_busy[k] / (devices[k] * span)) if devices[k] and span else None)
        for k, n in enumerate(names)
    }
    jt = jobs.job_type.astype(str)[st.job] if len(st.job) else np.zeros(0, dtype=str)
    where: dict[str, dict[str, float]] = {}
    for job_type in sorted(set(jt.tolist())):
        mask = jt == job_type
        hours = np.bincount(node_type[mask], weights=dev_s[mask], minlength=len(names)) / 3600.0
        where[job_type] = {n: float(hours[k]) for k, n in enumerate(names) if hours[k] > 0}
    jct = out.get("jct_mean_s")
    queue = out.get("queue_delay_mean_s")
    share = float(queue / jct) if jct and queue is not None else None
    return {"utilisation": util, "queueing_share": share, "device_hours": where}


# -- search -------------------------------------------------------------------------------------


@dataclass
class Answer:
    """The advisor's answer (module docstring)."""

    evaluations: list[Evaluation]
    front: list[Evaluation]
    recommendation: Evaluation | None
    infeasible: bool
    closest: list[Evaluation]
    exhaustive: bool

    def to_dict(self, problem: Problem) -> dict[str, Any]:
        def idx(ev: Evaluation | None) -> int | None:
            return None if ev is None else self.evaluations.index(ev)

        return {
            "types": [t.accelerator for t in problem.types],
            "evaluations": [e.to_dict() for e in self.evaluations],
            "front": [idx(e) for e in self.front],
            "recommendation": idx(self.recommendation),
            "infeasible": self.infeasible,
            "closest": [idx(e) for e in self.closest],
            "exhaustive": self.exhaustive,
        }


def _objective_values(problem: Problem, ev: Evaluation) -> list[float]:
    vals = []
    for o in problem.objectives:
        v = ev.metrics.get(o.metric)
        if v is None or not math.isfinite(v):
            vals.append(_PENALTY if o.sense == "min" else -_PENALTY)
        else:
            vals.append(float(v))
    return vals


def _key(problem: Problem, ev: Evaluation) -> tuple[Any, ...]:
    """Sort key: objectives (each as "smaller is better"), then devices, then counts."""
    vals = [
        v if o.sense == "min" else -v
        for o, v in zip(problem.objectives, _objective_values(problem, ev), strict=True)
    ]
    return (*vals, ev.metrics.get("devices", 0), ev.counts)


def pareto(problem: Problem, evs: Sequence[Evaluation]) -> list[Evaluation]:
    """The non-dominated evaluations over the objectives, in :func:`_key` order."""
    pts = [
        [
            v if o.sense == "min" else -v
            for o, v in zip(problem.objectives, _objective_values(problem, e), strict=True)
        ]
        for e in evs
    ]
    keep = []
    for i, p in enumerate(pts):
        dominated = any(
            all(q[k] <= p[k] for k in range(len(p))) and any(q[k] < p[k] for k in range(len(p)))
            for j, q in enumerate(pts)
            if j != i
        )
        if not dominated:
            keep.append(evs[i])
    return sorted(keep, key=lambda e: _key(problem, e))


def total_violation(problem: Problem, ev: Evaluation) -> float:
    """Sum of the constraints' relative violations, plus 1 per dropped-jobs share."""
    v = sum(c.violation(ev.metrics.get(c.metric)) for c in problem.constraints)
    total = ev.metrics.get("jobs_total") or 0
    dropped = ev.metrics.get("jobs_dropped") or 0
    return v + (dropped / total if total else 0.0)


class Search:
    """Proposes candidates and keeps their evaluations (module docstring).

    Drive it with :meth:`ask` (the next batch of candidates, empty when done) and
    :meth:`tell` (one evaluation, in any order); rebuild it after an interruption by telling
    it the stored evaluations in the order they were asked.

    Parameters
    ----------
    problem
        A validated problem.
    budget
        Evaluations (simulated candidates; static and empty ones are free).
    seed
        Seed of the proposals.
    batch
        Candidates per batch (the workers that evaluate in parallel).
    """

    def __init__(self, problem: Problem, *, budget: int, seed: int = 0, batch: int = 2) -> None:
        if budget < 1:
            raise SpecError("budget", "must be at least 1 evaluation")
        if batch < 1:
            raise SpecError("batch", "must be at least 1")
        self.problem = problem
        self.budget = int(budget)
        self.seed = int(seed)
        self.batch = int(batch)
        self.exhaustive = problem.grid_size() <= self.budget
        self._asked: list[tuple[int, ...]] = []
        self._told: dict[tuple[int, ...], Evaluation] = {}
        self._cat = _catalog(problem)

    # bookkeeping

    @property
    def evaluations(self) -> list[Evaluation]:
        """Told evaluations, in the order their candidates were asked."""
        return [self._told[c] for c in self._asked if c in self._told]

    @property
    def simulated(self) -> int:
        """Evaluations that ran the simulator (the budget counts these)."""
        return sum(1 for e in self._told.values() if e.status in ("full", "pruned"))

    @property
    def pending(self) -> list[tuple[int, ...]]:
        """Asked candidates not told yet."""
        return [c for c in self._asked if c not in self._told]

    @property
    def done(self) -> bool:
        if self.pending:
            return False
        if self.exhaustive:
            return len(self._told) >= self.problem.grid_size()
        return self.simulated >= self.budget or len(self._told) >= self.problem.grid_size()

    def tell(self, ev: Evaluation) -> None:
        """Record an evaluation (of an asked candidate, or a stored one when resuming)."""
        if ev.counts not in self._asked:
            self._asked.append(ev.counts)
        self._told[ev.counts] = ev

    # proposals

    def ask(self) -> list[tuple[int, ...]]:
        """The next batch (empty when done, or while the previous batch is pending)."""
        if self.pending or self.done:
            return []
        room = self.budget - self.simulated
        want = min(self.batch, room) if not self.exhaustive else self.batch
        if self.exhaustive:
            todo = [c for c in self.problem.grid() if c not in self._told]
            out = todo[:want]
        else:
            out = self._propose(want)
        self._asked.extend(out)
        return out

    def _static_or_empty(self, counts: tuple[int, ...]) -> Evaluation | None:
        static = static_metrics(self.problem, counts, self._cat)
        if self.problem.base_spec is None and static["devices"] == 0:
            return _finish(self.problem, Evaluation(counts, "empty", 0.0, dict(static)))
        if _status_static(self.problem, static):
            return _finish(self.problem, Evaluation(counts, "static", 0.0, dict(static)))
        return None

    def _propose(self, want: int) -> list[tuple[int, ...]]:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        problem = self.problem
        n_done = len(self._told)
        dists: dict[str, optuna.distributions.BaseDistribution] = {
            f"n{i}": optuna.distributions.IntDistribution(t.min_nodes, t.max_nodes, step=t.step)
            for i, t in enumerate(problem.types)
        }

        sampler = optuna.samplers.TPESampler(
            seed=_derive(self.seed, n_done),
            multivariate=True,
            n_startup_trials=min(10, max(2, self.budget // 5)),
        )
        study = optuna.create_study(
            directions=["minimize" if o.sense == "min" else "maximize" for o in problem.objectives],
            sampler=sampler,
        )
        for ev in self.evaluations:
            study.add_trial(self._frozen(ev, dists))
        out: list[tuple[int, ...]] = []
        seen = set(self._told) | set(self._asked)
        for _ in range(MAX_PROPOSALS):
            if len(out) >= want:
                break
            trial = study.ask(dists)
            counts = tuple(int(trial.params[f"n{i}"]) for i in range(len(problem.types)))
            if counts in seen:  # left running: the constant liar steers the next ask away
                continue
            free = self._static_or_empty(counts)
            if free is not None:  # costs no simulation: tell both the sampler and the study
                self.tell(free)
                seen.add(counts)
                for i, v in enumerate(self._violations(free)):
                    trial.set_constraint(f"c{i}", v)
                study.tell(trial, self._told_values(free))
                continue
            seen.add(counts)
            out.append(counts)  # left running (constant liar) until the batch is told
        if len(out) < want:  # the sampler keeps repeating itself: unevaluated grid points
            rng = np.random.default_rng([self.seed, n_done, 1])
            rest = [c for c in self.problem.grid() if c not in seen]
            rng.shuffle(rest)
            for counts in rest:
                if len(out) >= want:
                    break
                free = self._static_or_empty(counts)
                if free is not None:
                    self.tell(free)
                    continue
                out.append(counts)
        return out

    def _violations(self, ev: Evaluation) -> list[float]:
        vals = [c.violation(ev.metrics.get(c.metric)) for c in self.problem.constraints]
        vals = [min(v, _PENALTY) for v in vals]
        dropped = 1.0 if ev.metrics.get("jobs_dropped") else 0.0
        if ev.status in ("static", "empty"):
            dropped = max(dropped, 1.0) if ev.status == "empty" else dropped
        return [*vals, dropped]

    def _told_values(self, ev: Evaluation) -> list[float]:
        if ev.status in ("full", "pruned"):
            return _objective_values(self.problem, ev)
        # not simulated: the worst told value of each objective (or the penalty)
        out = []
        for k, o in enumerate(self.problem.objectives):
            v = ev.metrics.get(o.metric)
            if v is not None:
                out.append(float(v))
                continue
            told = [
                _objective_values(self.problem, e)[k]
                for e in self._told.values()
                if e.status in ("full", "pruned")
            ]
            told = [x for x in told if abs(x) < _PENALTY]
            if not told:
                out.append(_PENALTY if o.sense == "min" else -_PENALTY)
            else:
                out.append(max(told) if o.sense == "min" else min(told))
        return out

    def _frozen(self, ev: Evaluation, dists: Mapping[str, Any]) -> Any:
        import optuna

        params = {f"n{i}": int(c) for i, c in enumerate(ev.counts)}
        return optuna.trial.create_trial(
            params=params,
            distributions=dict(dists),
            values=self._told_values(ev),
            system_attrs={f"constraints:c{i}": v for i, v in enumerate(self._violations(ev))},
        )

    # the answer

    def answer(self) -> Answer:
        evs = self.evaluations
        full = [e for e in evs if e.status == "full"]
        feasible = [e for e in full if e.feasible]
        front = pareto(self.problem, feasible or full)
        rec = min(feasible, key=lambda e: _key(self.problem, e)) if feasible else None
        closest: list[Evaluation] = []
        if rec is None:
            ranked = sorted(
                (e for e in evs if e.status in ("full", "pruned")),
                key=lambda e: (total_violation(self.problem, e), _key(self.problem, e)),
            )
            closest = ranked[:5]
        return Answer(evs, front, rec, rec is None, closest, self.exhaustive)


def _derive(seed: int, n: int) -> int:
    """A 32-bit seed from ``(seed, n)`` (numpy's SeedSequence: stable across processes)."""
    return int(np.random.SeedSequence([seed, n]).generate_state(1)[0])


Evaluator = Callable[[list[tuple[int, ...]]], list[Evaluation]]


def advise(
    problem: Problem,
    jobs: JobTable,
    *,
    budget: int,
    seed: int = 0,
    batch: int = 2,
    evaluator: Evaluator | None = None,
    progress: Callable[[Search], None] | None = None,
) -> tuple[Search, Answer]:
    """Run a whole search in this process (or through ``evaluator``, e.g. a process pool)."""
    search = Search(problem, budget=budget, seed=seed, batch=batch)

    def local(batch_counts: list[tuple[int, ...]]) -> list[Evaluation]:
        return [evaluate_halving(problem, jobs, c) for c in batch_counts]

    run = evaluator or local
    while not search.done:
        todo = search.ask()
        if not todo:
            break
        for ev in run(todo):
            search.tell(ev)
        if progress is not None:
            progress(search)
    return search, search.answer()


def sensitivity(
    problem: Problem,
    jobs: JobTable,
    rec: Evaluation,
    *,
    known: Mapping[tuple[int, ...], Evaluation] | None = None,
    evaluator: Evaluator | None = None,
) -> list[dict[str, Any]]:
    """One step more and one step fewer of each type, simulated (reusing ``known`` ones).

    Each row: ``type``, ``delta`` (nodes), ``counts``, ``status``, ``feasible``, and for every
    objective and constrained metric its value and change against the recommendation.
    """
    known = dict(known or {})
    todo: list[tuple[str, int, tuple[int, ...]]] = []
    for i, t in enumerate(problem.types):
        for delta in (+t.step, -t.step):
            c = list(rec.counts)
            c[i] += delta
            if t.min_nodes <= c[i] <= t.max_nodes:
                todo.append((t.accelerator, delta, tuple(c)))
    missing = [c for _, _, c in todo if c not in known or known[c].status != "full"]
    if missing:
        evs = (
            evaluator(missing)
            if evaluator is not None
            else [evaluate(problem, jobs, c, with_why=False) for c in missing]
        )
        known.update({e.counts: e for e in evs})
    metrics = [o.metric for o in problem.objectives] + [
        c.metric
        for c in problem.constraints
        if c.metric not in {o.metric for o in problem.objectives}
    ]
    rows = []
    for name, delta, counts in todo:
        ev = known[counts]
        row: dict[str, Any] = {
            "type": name,
            "delta": delta,
            "counts": list(counts),
            "status": ev.status,
            "feasible": ev.feasible,
        }
        for m in metrics:
            v, base = ev.metrics.get(m), rec.metrics.get(m)
            row[m] = v
            row[f"{m}_change"] = None if v is None or base is None else v - base
        rows.append(row)
    return rows


def growth_plan(
    problem: Problem,
    jobs: JobTable,
    load_factors: Sequence[float],
    *,
    budget: int,
    seed: int = 0,
    batch: int = 2,
    start: Sequence[int] | None = None,
) -> list[dict[str, Any]]:
    """The purchase plan for a growth scenario (module docstring).

    Step ``k`` evaluates the inventory held so far (``start``, default the ranges' minimum)
    at load ``load_factors[k]``; if it breaks a constraint, a search over expansions (lower
    bounds raised to what is held) finds the best feasible one, which is bought. The cost
    horizon stays the workload's at load 1 (or the problem's).
    """
    held = tuple(start) if start is not None else tuple(t.min_nodes for t in problem.types)
    horizon = problem.horizon_hours or workload_horizon_s(jobs) / 3600.0
    steps: list[dict[str, Any]] = []
    first_break: int | None = None
    for k, factor in enumerate(load_factors):
        at = _replace(
            problem, load_factor=float(factor) * problem.load_factor, horizon_hours=horizon
        )
        now = evaluate(at, jobs, held, with_why=False)
        step: dict[str, Any] = {
            "step": k,
            "load_factor": float(factor),
            "held": list(held),
            "meets": now.feasible,
            "margins": {c: _json_num(m) for c, m in now.margins.items()},
            "buy": [0] * len(held),
            "after": list(held),
            "infeasible": False,
        }
        if not now.feasible:
            if first_break is None:
                first_break = k
            types = tuple(
                _replace_type(t, min_nodes=max(t.min_nodes, h))
                for t, h in zip(at.types, held, strict=True)
            )
            sub = _replace(at, types=types)
            if all(t.min_nodes > t.max_nodes for t in types):
                step["infeasible"] = True
            else:
                _, ans = advise(sub, jobs, budget=budget, seed=seed, batch=batch)
                if ans.recommendation is None:
                    step["infeasible"] = True
                else:
                    new = ans.recommendation.counts
                    step["buy"] = [a - b for a, b in zip(new, held, strict=True)]
                    step["after"] = list(new)
                    step["margins"] = {
                        c: _json_num(m) for c, m in ans.recommendation.margins.items()
                    }
                    held = new
        step["capital_usd"] = static_metrics(problem, held)["capital_usd"]
        steps.append(step)
        if step["infeasible"]:
            break
    for s in steps:
        s["first_break"] = first_break
    return steps


def _replace(problem: Problem, **kw: Any) -> Problem:
    import dataclasses

    return dataclasses.replace(problem, **kw)


def _replace_type(t: TypeRange, **kw: Any) -> TypeRange:
    import dataclasses

    return dataclasses.replace(t, **kw)


# -- text forms (CLI) ---------------------------------------------------------------------------

_TYPE_RE = re.compile(
    r"^(?P<acc>[^:@]+):(?P<lo>\d+)(?:-(?P<hi>\d+))?(?::(?P<step>\d+))?(?:@(?P<per>\d+))?$"
)
_CONSTRAINT_RE = re.compile(r"^\s*(?P<m>[a-z0-9_]+)\s*(?P<op><=|>=)\s*(?P<v>[-+0-9.eE]+)\s*$")


def parse_types(text: str) -> tuple[TypeRange, ...]:
    """``"h100:0-4,a100:0-8:2@4"``: ``type:min-max[:step][@devices_per_node]`` per item, node
    counts (``type:max`` is ``type:0-max``)."""
    out = []
    for i, item in enumerate(s.strip() for s in text.split(",")):
        m = _TYPE_RE.match(item)
        if not m:
            raise SpecError(
                f"types[{i}]",
                f"bad item {item!r}: expected type:min-max[:step][@devices_per_node], "
                "e.g. h100:0-4 or l4:0-16:2@4",
            )
        lo, hi = int(m["lo"]), m["hi"]
        out.append(
            TypeRange(
                accelerator=m["acc"].strip(),
                min_nodes=lo if hi is not None else 0,
                max_nodes=int(hi) if hi is not None else lo,
                step=int(m["step"] or 1),
                devices_per_node=int(m["per"] or 8),
            )
        )
    return tuple(out)


def parse_constraint(text: str, index: int = 0) -> Constraint:
    """``"jct_p95_s<=86400"`` (or ``>=``)."""
    m = _CONSTRAINT_RE.match(text)
    if not m:
        raise SpecError(
            f"constraints[{index}]", f"bad constraint {text!r}: expected e.g. jct_p95_s<=86400"
        )
    try:
        bound = float(m["v"])
    except ValueError:
        raise SpecError(f"constraints[{index}].bound", f"not a number: {m['v']!r}") from None
    return Constraint(check_metric(m["m"], f"constraints[{index}].metric"), m["op"], bound)


def parse_objective(text: str, index: int = 0) -> Objective:
    """``"cost_usd"`` (its natural sense, :func:`sense`) or ``"max:utilisation"``."""
    how, _, name = text.strip().rpartition(":")
    metric = check_metric(name, f"objectives[{index}].metric")
    if how and how not in ("min", "max"):
        raise SpecError(f"objectives[{index}].sense", f"must be min or max, not {how!r}")
    return Objective(metric, how or sense(metric))


def growth_factors(text: str) -> tuple[float, ...]:
    """``"1.3x4"`` (+30 % per step for four steps: 1.3, 1.69, 2.197, 2.8561) or an explicit
    list ``"1,1.2,1.5"``."""
    t = text.strip()
    m = re.fullmatch(r"([0-9.]+)x(\d+)", t)
    try:
        if m:
            g, n = float(m[1]), int(m[2])
            if not (g > 0 and 1 <= n <= 40):
                raise ValueError
            return tuple(g ** (k + 1) for k in range(n))
        vals = tuple(float(x) for x in t.split(","))
    except ValueError:
        raise SpecError(
            "growth", f"bad growth {text!r}: expected e.g. 1.3x4 or 1,1.2,1.5"
        ) from None
    if not vals or any(not (math.isfinite(v) and v > 0) for v in vals):
        raise SpecError("growth", f"bad growth {text!r}: load factors must be positive")
    return vals

"""``python -m clustersim advise``: the capacity advisor (:mod:`clustersim.advisor`) on the
command line; prints the front, the recommendation, its margins and sensitivity (and a
purchase plan with ``--growth``) as tables, or one JSON object with ``--json``.

Example::

    python -m clustersim advise --trace philly.csv --types h100:0-4,a100:0-8,l4:0-16 \\
        --policy tiresias --objective cost_usd --objective jct_p95_s \\
        --constraint 'jct_p95_s<=86400' --budget-capital 3e6 --evaluations 60 --workers 2
"""

from __future__ import annotations

import argparse
import json
import math
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from clustersim.errors import ClustersimError, SpecError


def add_parser(sub: Any) -> None:
    a = sub.add_parser(
        "advise", help="capacity advisor: search inventories for the best one to buy or rent"
    )
    a.add_argument("--trace", required=True, help="workload trace file")
    a.add_argument("--format", default=None, help="trace format (default: auto-detect)")
    a.add_argument(
        "--jobs", type=int, default=None, help="use the first N jobs by submit time only"
    )
    a.add_argument(
        "--types",
        required=True,
        help="decision space: type:min-max[:step][@devices_per_node],... in nodes,"
        " e.g. h100:0-4,a100:0-8,l4:0-16:2@4",
    )
    a.add_argument("--base", default=None, help="base cluster (spec file, preset, shorthand)")
    a.add_argument(
        "--policy", action="append", default=[], help="policy (repeat for several; default fifo)"
    )
    a.add_argument(
        "--objective",
        action="append",
        default=[],
        help="metric to optimise, its natural direction or min:/max: (repeat; the first"
        " decides the recommendation); default cost_usd and jct_p95_s",
    )
    a.add_argument(
        "--constraint", action="append", default=[], help="e.g. 'jct_p95_s<=86400' (repeat)"
    )
    a.add_argument("--budget-capital", type=float, default=None, help="capital_usd <= this")
    a.add_argument("--budget-hourly", type=float, default=None, help="hourly_usd <= this")
    a.add_argument("--rent", action="store_true", help="price added devices by the hour")
    a.add_argument("--region", default=None, help="region of the new pools (of --base)")
    a.add_argument("--evaluations", type=int, default=40, help="evaluation budget")
    a.add_argument("--seed", type=int, default=0, help="seed of the search")
    a.add_argument(
        "--seeds", default="0", help="simulation seeds, comma-separated (metrics averaged)"
    )
    a.add_argument("--load-factor", type=float, default=1.0, help="arrival-rate multiplier")
    a.add_argument("--horizon-hours", type=float, default=None, help="cost horizon")
    a.add_argument("--prefix", type=float, default=0.25, help="successive halving prefix (1: off)")
    a.add_argument(
        "--growth", default=None, help="growth scenario: 1.3x4 or 1,1.2,1.5 (a purchase plan)"
    )
    a.add_argument("--workers", type=int, default=1, help="evaluate in this many processes")
    a.add_argument("--no-sensitivity", action="store_true", help="skip the ±1 node runs")
    a.add_argument("--json", action="store_true", help="print one JSON object")
    a.set_defaults(func=cmd_advise)


def _problem(args: argparse.Namespace) -> Any:
    from clustersim import advisor as adv
    from clustersim.spec import cluster_to_spec, load_cluster

    types = adv.parse_types(args.types)
    if args.region:
        import dataclasses

        types = tuple(dataclasses.replace(t, region=args.region) for t in types)
    objectives = tuple(adv.parse_objective(o, i) for i, o in enumerate(args.objective)) or (
        adv.Objective("cost_usd"),
        adv.Objective("jct_p95_s"),
    )
    constraints = [adv.parse_constraint(c, i) for i, c in enumerate(args.constraint)]
    if args.budget_capital is not None:
        constraints.append(adv.Constraint("capital_usd", "<=", args.budget_capital))
    if args.budget_hourly is not None:
        constraints.append(adv.Constraint("hourly_usd", "<=", args.budget_hourly))
    try:
        seeds = tuple(int(s) for s in args.seeds.split(","))
    except ValueError:
        raise SpecError(
            "seeds", f"not a comma-separated list of integers: {args.seeds!r}"
        ) from None
    base = cluster_to_spec(load_cluster(args.base)) if args.base else None
    problem = adv.Problem(
        types=types,
        objectives=objectives,
        constraints=tuple(constraints),
        policies=tuple(args.policy) or ("fifo",),
        seeds=seeds,
        base_spec=base,
        load_factor=args.load_factor,
        horizon_hours=args.horizon_hours,
        rent=args.rent,
        prefix=args.prefix,
    )
    adv.validate(problem)
    return problem


# the worker processes' copy of the problem and workload (set once per process)
_STATE: dict[str, Any] = {}


def _init(problem_dict: dict[str, Any], trace: str, fmt: str | None, n: int | None) -> None:
    from clustersim import advisor as adv

    _STATE["problem"] = adv.Problem.from_dict(problem_dict)
    _STATE["jobs"] = _read(trace, fmt, n)


def _eval_one(counts: tuple[int, ...]) -> dict[str, Any]:
    from clustersim import advisor as adv

    return adv.evaluate_halving(_STATE["problem"], _STATE["jobs"], counts).to_dict()


def _read(trace: str, fmt: str | None, n: int | None) -> Any:
    from clustersim.advisor import prefix_jobs
    from clustersim.traces import read_trace

    jobs, _ = read_trace(trace, fmt)
    if n is not None:
        if n < 1:
            raise SpecError("jobs", "must be at least 1")
        jobs = prefix_jobs(jobs, min(1.0, n / max(1, len(jobs))))
    return jobs


def cmd_advise(args: argparse.Namespace) -> int:
    from clustersim import advisor as adv

    problem = _problem(args)
    jobs = _read(args.trace, args.format, args.jobs)
    evaluator = None
    pool = None
    if args.workers > 1:
        import multiprocessing as mp

        pool = ProcessPoolExecutor(
            args.workers,
            mp_context=mp.get_context("spawn"),
            initializer=_init,
            initargs=(problem.to_dict(), args.trace, args.format, args.jobs),
        )

        def evaluator(batch: list[tuple[int, ...]]) -> list[adv.Evaluation]:
            assert pool is not None
            return [adv.Evaluation.from_dict(d) for d in pool.map(_eval_one, batch)]

    try:
        search, answer = adv.advise(
            problem,
            jobs,
            budget=args.evaluations,
            seed=args.seed,
            batch=max(2, args.workers),
            evaluator=evaluator,
        )
        sens: list[dict[str, Any]] = []
        if answer.recommendation is not None and not args.no_sensitivity:
            known = {e.counts: e for e in answer.evaluations}
            sens = adv.sensitivity(problem, jobs, answer.recommendation, known=known)
        plan = None
        if args.growth:
            plan = adv.growth_plan(
                problem,
                jobs,
                adv.growth_factors(args.growth),
                budget=args.evaluations,
                seed=args.seed,
                start=(
                    answer.recommendation.counts
                    if answer.recommendation is not None and not args.base
                    else None
                ),
            )
    finally:
        if pool is not None:
            pool.shutdown()
    out = answer.to_dict(problem)
    out["sensitivity"] = sens
    out["growth"] = plan
    out["simulated"] = search.simulated
    if args.json:
        print(json.dumps(_clean(out), allow_nan=False, sort_keys=True))
        return 0
    _print(problem, answer, sens, plan, search)
    return 0


def _clean(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        if abs(v) >= 1e5:
            return f"{v:,.0f}"
        return f"{v:.4g}"
    return str(v)


def _print(problem: Any, answer: Any, sens: list[dict[str, Any]], plan: Any, search: Any) -> None:
    names = [t.accelerator for t in problem.types]
    metrics = [o.metric for o in problem.objectives] + [
        c.metric
        for c in problem.constraints
        if c.metric not in {o.metric for o in problem.objectives}
    ]
    head = [*names, *metrics, "feasible"]
    mode = "exhaustive" if answer.exhaustive else "search"
    print(
        f"{len(answer.evaluations)} candidates ({search.simulated} simulated, {mode});"
        f" Pareto front over {', '.join(o.metric for o in problem.objectives)}:"
    )
    rows = [
        [*map(str, e.counts), *(_fmt(e.metrics.get(m)) for m in metrics), str(e.feasible)]
        for e in answer.front
    ]
    _table(head, rows)
    rec = answer.recommendation
    if rec is None:
        print("\nno candidate meets every constraint; the closest:")
        rows = [
            [*map(str, e.counts), *(_fmt(e.metrics.get(m)) for m in metrics), e.status]
            for e in answer.closest
        ]
        _table([*names, *metrics, "status"], rows)
    else:
        print(
            "\nrecommended: "
            + ", ".join(f"{n} x{c}" for n, c in zip(names, rec.counts, strict=True))
        )
        for c, m in rec.margins.items():
            print(f"  {c:<36} margin {m:+.1%}")
        if rec.why:
            for t, u in rec.why["utilisation"].items():
                print(f"  utilisation {t:<24} {_fmt(u)}")
            print(f"  queueing share of JCT {'':<13} {_fmt(rec.why['queueing_share'])}")
    if sens:
        print("\nsensitivity (one step more or fewer of each type, simulated):")
        head = ["type", "delta", *[f"{m} change" for m in metrics], "feasible"]
        rows = [
            [
                r["type"],
                f"{r['delta']:+d}",
                *(_fmt(r.get(f"{m}_change")) for m in metrics),
                str(r["feasible"]),
            ]
            for r in sens
        ]
        _table(head, rows)
    if plan:
        print("\ngrowth plan:")
        rows = [
            [
                str(s["step"]),
                f"{s['load_factor']:.3g}",
                str(s["meets"]),
                " ".join(map(str, s["buy"])),
                " ".join(map(str, s["after"])),
                "yes" if s["infeasible"] else "",
            ]
            for s in plan
        ]
        _table(["step", "load", "held meets", "buy", "after", "infeasible"], rows)


def _table(head: list[str], rows: list[list[str]]) -> None:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)
    ]
    print("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
    for r in rows:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)))


__all__ = ["ClustersimError", "add_parser", "cmd_advise"]

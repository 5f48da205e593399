"""Command line: ``python -m clustersim {run,inspect,synth,import-cluster,policies,...} ...``.

Errors a user can cause (bad spec, unreadable trace, unknown policy) print one line on stderr
and exit with status 2; nothing else is printed in that case.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from clustersim.errors import ClustersimError


def _parse_params(items: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs; values are parsed as JSON when they can be (numbers, lists)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ClustersimError(f"--param wants key=value, got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
        if isinstance(out[key], list):
            out[key] = tuple(out[key])
    return out


def _limits() -> Any:
    """The trace-reading limits set by the ``CLUSTERSIM_TRACE_MAX_*`` environment variables
    (see :mod:`clustersim.traces.limits`)."""
    from clustersim.traces import ReadLimits

    return ReadLimits.from_env()


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.1f}" if abs(v) >= 100 else f"{v:.4g}"
    return str(v)


SUMMARY_ROWS = (
    ("jobs_total", "jobs"),
    ("jobs_completed", "completed"),
    ("jobs_dropped", "dropped"),
    ("jobs_fit_nowhere", "dropped: no device can hold them"),
    ("jct_mean_s", "JCT mean [s]"),
    ("jct_p50_s", "JCT p50 [s]"),
    ("jct_p95_s", "JCT p95 [s]"),
    ("jct_p99_s", "JCT p99 [s]"),
    ("wait_mean_s", "total wait mean [s]"),
    ("wait_p99_s", "total wait p99 [s]"),
    ("queue_delay_mean_s", "first-start delay mean [s]"),
    ("makespan_s", "makespan [s]"),
    ("utilisation", "utilisation"),
    ("jain_index", "Jain's index"),
    ("ftf_rho_max", "finish-time fairness max"),
    ("horizon_s", "cost horizon [s]"),
    ("cost_owned_usd", "cost, owned, over horizon [$]"),
    ("cost_cloud_usd", "cost, cloud, device-h held [$]"),
    ("busy_device_hours", "capacity used [device-h]"),
    ("reference_gpu_hours_completed", "work completed [ref GPU-h]"),
    ("work_per_dollar", "work/$, owned [ref GPU-h/$]"),
    ("work_per_dollar_cloud", "work/$, cloud [ref GPU-h/$]"),
    ("energy_kwh", "energy [kWh]"),
    ("carbon_kg", "carbon [kg CO2e]"),
    ("preemptions", "preemptions"),
    ("resizes", "resizes (elastic jobs)"),
)

LP_ROWS = (
    ("lp_solves", "LP solves"),
    ("lp_solver_s", "time in the LP solver [s]"),
    ("lp_fallbacks", "LP fallbacks"),
)

COLOCATION_ROWS = (
    ("colocations", "pairs formed on shared devices"),
    ("colocated_job_hours", "job-hours run as a guest [h]"),
)
FAILURE_ROWS = (
    ("node_failures", "node failures"),
    ("device_hours_down", "device-hours down [h]"),
    ("restarts", "job restarts after a failure"),
    ("lost_work_device_hours", "lost work [device-h]"),
    ("checkpoint_device_hours", "checkpoint writing [device-h]"),
    ("goodput", "goodput (useful / held)"),
    ("effective_training_time_ratio", "effective training time ratio"),
)
NETWORK_ROWS = (
    ("network_lost_job_hours", "time lost to contention [job-h]"),
    ("uplink_utilisation_mean", "rack uplink utilisation (mean)"),
    ("uplink_utilisation_max", "rack uplink utilisation (max)"),
)
GPUSHARE_ROWS = (
    ("gpu_shared_jobs", "jobs sharing a GPU"),
    ("gpu_allocated_share_mean", "GPU milli allocated (mean share)"),
    ("gpu_frag_rate_mean", "GPU fragmentation rate (mean)"),
    ("gpu_share_peak_milli", "most milli on one GPU"),
    ("gpu_share_rerates", "rate changes from co-tenants"),
)
#: The failure flags of `run` (clustersim.failures): flag, attribute, least value, open bound.
FAILURE_FLAGS = (
    ("--mtbf-hours", "mtbf_hours", 0.0, True),
    ("--repair-hours", "repair_hours", 0.0, True),
    ("--checkpoint-interval-s", "checkpoint_interval_s", 0.0, True),
    ("--checkpoint-overhead-s", "checkpoint_overhead_s", 0.0, False),
)


def _failure_options(args: argparse.Namespace, cluster: Any) -> tuple[Any, Any]:
    """The run's :class:`~clustersim.failures.FailureOptions` (``None`` without
    ``--failures``) and its cluster, with ``--mtbf-hours``/``--repair-hours`` applied to every
    node. Every value is checked here, so an error names the flag."""
    import numpy as np

    from clustersim.failures import FailureOptions

    given = {attr: getattr(args, attr) for _, attr, _, _ in FAILURE_FLAGS}
    for flag, attr, low, open_ in FAILURE_FLAGS:
        v = given[attr]
        if v is None:
            continue
        spot = args.spot or args.spot_trace is not None
        if not args.failures and not (spot and attr.startswith("checkpoint")):
            needs = "--failures" if not attr.startswith("checkpoint") else "--failures or --spot"
            raise ClustersimError(f"{flag} needs {needs} (failures are off without it)")
        if not math.isfinite(v) or (v <= low if open_ else v < low):
            raise ClustersimError(f"{flag}: must be a finite number {'>' if open_ else '>='} 0")
    if not args.failures:
        return None, cluster
    n = cluster.n_nodes
    if given["mtbf_hours"] is not None:
        cluster = dataclasses.replace(cluster, node_mtbf_h=np.full(n, given["mtbf_hours"]))
    if given["repair_hours"] is not None:
        cluster = dataclasses.replace(cluster, node_repair_h=np.full(n, given["repair_hours"]))
    keys = ("checkpoint_interval_s", "checkpoint_overhead_s")
    kw = {k: given[k] for k in keys if given[k] is not None}
    return FailureOptions(**kw), cluster


SPOT_ROWS = (
    ("spot_reclaims", "spot reclaims"),
    ("spot_device_hours_reclaimed", "spot device-hours reclaimed [h]"),
    ("spot_restarts", "job restarts after a reclaim"),
    ("spot_restarts_saved_by_notice", "of which checkpointed in notice"),
    ("spot_lost_work_device_hours", "lost to reclaims [device-h]"),
    ("goodput", "goodput (useful / held)"),
    ("effective_training_time_ratio", "effective training time ratio"),
)
SPOT_COST_ROWS = (
    ("spot_device_hours", "spot device-hours [h]"),
    ("cost_cloud_spot_usd", "cloud cost at spot prices [$]"),
    ("spot_savings_usd", "saved against on-demand [$]"),
)


def _spot_options(args: argparse.Namespace, cluster: Any, failures: Any) -> Any:
    """The run's :class:`~clustersim.spot.SpotOptions` (``None`` without ``--spot`` or
    ``--spot-trace``); a trace is read and checked against the cluster here, so an error
    names the file, line and column."""
    from clustersim.spot import SpotOptions, check_trace_nodes, read_trace_csv

    if not args.spot and args.spot_trace is None:
        return None
    if not cluster.node_spot.any():
        flag = "--spot-trace" if args.spot_trace is not None else "--spot"
        raise ClustersimError(
            f'{flag}: cluster {cluster.name!r} has no spot pool (mark one with "spot": true'
            " in its spec)"
        )
    trace = None
    if args.spot_trace is not None:
        trace = read_trace_csv(args.spot_trace)
        check_trace_nodes(trace, cluster, where=f"--spot-trace {args.spot_trace}")
    kw = {}
    if failures is None:  # with failures on, the jobs' checkpoints are the failure options'
        for key in ("checkpoint_interval_s", "checkpoint_overhead_s"):
            if getattr(args, key) is not None:
                kw[key] = getattr(args, key)
    return SpotOptions(trace=trace, **kw)


AUX_ROWS = (
    ("cpu_utilisation", "CPU utilisation"),
    ("mem_utilisation", "memory utilisation"),
)

STRAGGLER_ROWS = (
    ("slow_nodes", "slow nodes"),
    ("jobs_slowed", "jobs slowed by a slow node"),
    ("straggler_device_hours", "lost to slow pace [device-h]"),
)


def _straggler_options(args: argparse.Namespace) -> Any:
    """The run's :class:`~clustersim.stragglers.StragglerOptions` (``None`` without
    ``--slow-share``), checked here so that an error names the flag."""
    from clustersim.stragglers import StragglerOptions

    if args.slow_share is None:
        for flag, given in (("--slow-speed", args.slow_speed), ("--avoid-slow", args.avoid_slow)):
            if given not in (None, False):
                raise ClustersimError(f"{flag} needs --slow-share (stragglers are off without it)")
        return None
    speed = 0.5 if args.slow_speed is None else args.slow_speed
    try:
        return StragglerOptions(share=args.slow_share, speed=speed, avoid=args.avoid_slow).checked()
    except ClustersimError as exc:
        names = {"share": "--slow-share", "speed": "--slow-speed"}
        text = str(exc)
        for key, name in names.items():
            text = text.replace(f"stragglers.{key}", name)
        raise ClustersimError(text) from None


def cmd_run(args: argparse.Namespace) -> int:
    from clustersim.compat import prepare
    from clustersim.engine import EngineOptions, simulate
    from clustersim.metrics import per_job_frame, summary
    from clustersim.network import NetworkOptions
    from clustersim.presets import preset
    from clustersim.spec import load_cluster
    from clustersim.traces import read_trace

    if bool(args.cluster) == bool(args.preset):
        raise ClustersimError("give exactly one of --cluster and --preset")
    compat = args.compat
    if args.gavel_compat:
        if compat not in (None, "gavel"):
            raise ClustersimError(
                f"--gavel-compat is --compat gavel; it conflicts with --compat {compat}"
            )
        compat = "gavel"
    cluster = preset(args.preset) if args.preset else load_cluster(args.cluster)
    from scheduling.params import cluster_errors

    try:
        problems = cluster_errors(args.policy, _parse_params(args.param), cluster, "--param")
    except (KeyError, ValueError):
        problems = []  # unknown or ill-typed parameters: `prepare` says what is wrong
    if problems:  # e.g. a power budget below one node's idle draw
        raise ClustersimError("; ".join(p.replace("--param.", "--param ") for p in problems))
    failures, cluster = _failure_options(args, cluster)
    stragglers = _straggler_options(args)
    spot = _spot_options(args, cluster, failures)
    jobs, report = read_trace(args.trace, args.format, limits=_limits())
    if args.elastic is not None:
        from clustersim.elastic import apply_elastic

        jobs, _ = apply_elastic(jobs, args.elastic, cluster)
    if args.synergy_models is not None:
        from clustersim.aux_speed import assign_synergy_models, parse_split

        jobs = assign_synergy_models(jobs, parse_split(args.synergy_models))
    if args.aux_demand is not None:
        from clustersim.resources import apply_demand

        jobs = apply_demand(jobs, args.aux_demand, cluster)
    run = prepare(
        jobs,
        cluster,
        args.policy,
        _parse_params(args.param),
        args.placement,
        compat=compat,
        restore_s=args.restore_s,
    )
    policy, placement, rates = run.policy, run.placement, run.rates
    result = simulate(
        run.jobs,
        cluster,
        policy,
        placement,
        rates=rates,
        options=EngineOptions(
            seed=args.seed,
            until=args.until,
            failures=failures,
            carbon_start=args.start,
            stragglers=stragglers,
            network=NetworkOptions() if args.network else None,
            spot=spot,
            **run.engine,
        ),
    )
    horizon_s = None if args.horizon_hours is None else args.horizon_hours * 3600.0
    out: dict[str, Any] = dict(summary(result, carbon_start=args.start, horizon_s=horizon_s))
    out.update(
        {
            "policy": policy.name,
            "placement": placement.name,
            "cluster": cluster.name,
            "devices": cluster.total_devices,
            "trace": str(args.trace),
            "format": report.format,
            "seed": args.seed,
            "compat": compat,
            "events": result.events,
            "jobs_extrapolated": int(rates.extrapolated.sum()),
        }
    )
    if args.out:
        frame = per_job_frame(result)
        path = Path(args.out)
        if path.suffix == ".parquet":
            frame.to_parquet(path, index=False)
        elif path.suffix == ".csv":
            frame.to_csv(path, index=False)
        else:
            raise ClustersimError(f"--out {path}: use a .csv or .parquet file name")
    if args.json:
        print(json.dumps(out, allow_nan=False, sort_keys=True))
        return 0
    print(f"{policy.name} on {cluster.name} ({cluster.total_devices} devices), {args.trace}")
    for key, label in SUMMARY_ROWS:
        print(f"  {label:<32} {_fmt(out.get(key))}")
        if key == "utilisation" and result.aux is not None:  # clustersim/resources.py
            for aux_key, aux_label in AUX_ROWS:
                print(f"  {aux_label:<32} {_fmt(out.get(aux_key))}")
    if out.get("lp_solves"):  # allocation LPs (scheduling/allocation.py)
        for key, label in LP_ROWS:
            print(f"  {label:<32} {_fmt(out.get(key))}")
    if out.get("colocations"):  # co-location (clustersim/colocation.py)
        for key, label in COLOCATION_ROWS:
            print(f"  {label:<32} {_fmt(out.get(key))}")
    if result.failures is not None:  # node failures (clustersim/failures.py)
        for key, label in FAILURE_ROWS:
            print(f"  {label:<32} {_fmt(out.get(key))}")
    if result.spot is not None:  # spot reclaims (clustersim/spot.py)
        shown = dict(FAILURE_ROWS) if result.failures is not None else {}
        for key, label in SPOT_ROWS:
            if key not in shown:
                print(f"  {label:<32} {_fmt(out.get(key))}")
    if "spot_device_hours" in out:  # a cluster with spot pools (clustersim/spot.py)
        for key, label in SPOT_COST_ROWS:
            print(f"  {label:<32} {_fmt(out.get(key))}")
    if result.stragglers is not None:  # slow nodes (clustersim/stragglers.py)
        for key, label in STRAGGLER_ROWS:
            print(f"  {label:<32} {_fmt(out.get(key))}")
    if result.network is not None:  # network contention (clustersim/network.py)
        for key, label in NETWORK_ROWS:
            print(f"  {label:<32} {_fmt(out.get(key))}")
    if result.gpushare is not None:  # GPU sharing (clustersim/gpushare.py)
        for key, label in GPUSHARE_ROWS:
            print(f"  {label:<32} {_fmt(out.get(key))}")
    notes = list(getattr(rates, "notes", []) or [])
    for note in notes[:5]:
        print(f"  note: {note}")
    if args.out:
        print(f"  per-job results written to {args.out}")
    return 0


def _span_text(seconds: float) -> str:
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:,.0f} s"


def cmd_inspect(args: argparse.Namespace) -> int:
    """Read a trace and print its parse report (a table, or one JSON object)."""
    from clustersim.errors import TraceError
    from clustersim.traces import read_trace

    options = _parse_params(args.option)
    if args.member is not None:
        options["member"] = args.member
    try:
        _, report = read_trace(args.file, args.format, limits=_limits(), **options)
    except TraceError as exc:  # keep the error on one line
        raise TraceError(exc.path, exc.line, exc.field, " ".join(exc.message.split())) from None
    out = report.to_dict()
    if args.json:
        print(json.dumps(out, allow_nan=False))
        return 0
    print(f"{out['path']}: {out['format']}")
    start = f" from {out['start_time']}" if out["start_time"] else ""
    rows = (
        ("jobs read", f"{out['jobs_read']:,}"),
        ("jobs kept", f"{out['jobs_kept']:,}"),
        ("jobs dropped", f"{out['jobs_dropped']:,}"),
        ("time span", f"{_span_text(out['time_span_s'])}{start}"),
    )
    for label, value in rows:
        print(f"  {label:<14} {value}")
    if out["drop_reasons"]:
        print("dropped:")
        for reason, tally in out["drop_reasons"].items():
            lines = ", ".join(str(n) for n in tally["first_lines"])
            more = ", ..." if tally["count"] > len(tally["first_lines"]) else ""
            print(f"  {tally['count']:>10,}  {reason} (line {lines}{more})")
    for title, key in (("warnings:", "warnings"), ("assumptions:", "assumptions")):
        if out[key]:
            print(title)
            for text in out[key]:
                print(f"  - {text}")
    return 0


def cmd_policies(args: argparse.Namespace) -> int:
    from scheduling.registry import POLICIES

    for name, cls in POLICIES.items():
        doc = (cls.__doc__ or "").strip().splitlines()[0]
        print(f"{name:<10} {doc}  [{cls.citation}]")
    return 0


def cmd_sharing(args: argparse.Namespace) -> int:
    from clustersim import sharing

    nodes = sharing.load_nodes(args.nodes)
    pods = sharing.load_pods(args.pods)
    names = sharing.PLACEMENTS if args.placement == "all" else (args.placement,)
    if args.placement != "all" and args.placement not in sharing.PLACEMENTS:
        raise ClustersimError(
            f"unknown placement {args.placement!r}; choose all or one of "
            + ", ".join(sharing.PLACEMENTS)
        )
    runs = sharing.study(nodes, pods, names, seed=args.seed, order=args.order, tune=args.tune)
    summaries = [r.summary() for r in runs]
    if args.json:
        print(json.dumps({"dropped": pods.dropped, "runs": summaries}))
        return 0

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{100 * v:.2f}%"

    first = summaries[0]
    print(
        f"{len(nodes)} nodes, {first['gpu_capacity']} GPUs; {first['pods']} pods"
        f" ({args.order} order, seed {args.seed}), asking for {pct(first['arrived_share'])}"
        " of the GPUs"
    )
    if pods.dropped:
        print("dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(pods.dropped.items())))
    header = ("placement", "placed", "1st fail", "alloc@1st fail", "alloc final", "frag rate")
    print("{:<15}{:>8}{:>10}{:>16}{:>13}{:>11}".format(*header))
    for s in summaries:
        fail = "-" if s["first_failure_pod"] is None else str(s["first_failure_pod"])
        print(
            f"{s['placement']:<15}{s['placed']:>8}{fail:>10}"
            f"{pct(s['allocated_share_at_first_failure']):>16}"
            f"{pct(s['allocated_share_final']):>13}{pct(s['frag_rate_final']):>11}"
        )
    return 0


def cmd_presets(args: argparse.Namespace) -> int:
    from clustersim.presets import PRESETS, preset

    for name in PRESETS:
        c = preset(name)
        print(f"{name:<20} {c.total_devices:>6} devices  {', '.join(c.type_names)}")
    return 0


def cmd_formats(args: argparse.Namespace) -> int:
    from clustersim.traces import formats

    for name, desc in formats().items():
        print(f"{name:<16} {desc}")
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    """Generate a synthetic workload and write it as a job-table CSV."""
    from clustersim.synth import (
        ArrivalProcess,
        fit_workload,
        gavel_model,
        generate_with_notes,
        write_jobs_csv,
    )

    if args.jobs is None and args.duration_s is None:
        raise ClustersimError("give --jobs or --duration-s (or both)")
    if args.fit:
        from clustersim.traces import read_trace

        trace, report = read_trace(args.fit, args.format, limits=_limits())
        model = fit_workload(
            trace,
            duration=args.duration_model,
            start_time=report.start_time,
            diurnal=args.arrival == "diurnal",
            job_types=not args.no_job_types,
        )
    else:
        model = gavel_model(multi_gpu=not args.single_gpu)
        if args.no_job_types:
            model = dataclasses.replace(model, job_types=None)
    arrival = model.arrival
    rate = args.rate if args.rate is not None else arrival.rate_per_hour
    if (args.arrival or arrival.kind) == "poisson":
        arrival = ArrivalProcess.poisson(rate)
    elif arrival.kind == "diurnal":  # the profile fitted to --fit
        arrival = dataclasses.replace(arrival, rate_per_hour=rate)
    else:
        arrival = ArrivalProcess(
            kind="diurnal",
            rate_per_hour=rate,
            amplitude=args.amplitude,
            peak_hour=args.peak_hour,
            start_hour=args.start_hour,
        )
    jobs, notes = generate_with_notes(
        model,
        n_jobs=args.jobs,
        duration_s=args.duration_s,
        seed=args.seed,
        arrival=arrival,
        elastic=args.elastic,
    )
    write_jobs_csv(jobs, args.out)
    span = float(jobs.submit_time[-1] - jobs.submit_time[0])
    print(f"wrote {len(jobs):,} jobs over {_span_text(span)} to {args.out}")
    for line in model.describe()[:1] + notes:
        print(f"  {line}")
    return 0


def cmd_import_cluster(args: argparse.Namespace) -> int:
    """Import a node list (kubectl, Slurm, Alibaba) as a cluster spec."""
    from clustersim.inventory import import_inventory

    aliases: dict[str, str] = {}
    for item in args.alias:
        name, sep, target = item.partition("=")
        if not sep or not name or not target:
            raise ClustersimError(f"--alias wants NAME=TYPE, got {item!r}")
        aliases[name] = target
    spec, report = import_inventory(
        args.file,
        args.format,
        aliases=aliases or None,
        name=args.name,
        nodes_per_rack=args.nodes_per_rack,
    )
    text = json.dumps(spec, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps({"report": report.to_dict(), "spec": spec}, allow_nan=False))
        return 0
    if not args.out:
        print(text)
        return 0
    for line in report.summary():
        print(line)
    print(f"spec written to {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m clustersim", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="simulate a trace on a cluster under a policy")
    r.add_argument("--cluster", help="JSON spec file, preset name, or shorthand v100:8,p100:8")
    r.add_argument("--preset", help="cluster preset name (see `presets`)")
    r.add_argument("--trace", required=True, help="trace file")
    r.add_argument("--format", default=None, help="trace format (default: auto-detect)")
    r.add_argument("--policy", default="fifo", help="policy name (see `policies`)")
    r.add_argument("--param", action="append", default=[], help="policy parameter key=value")
    r.add_argument(
        "--placement",
        default=None,
        help="placement strategy (default: consolidate, or the --compat simulator's)",
    )
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--until", type=float, default=float("inf"), help="stop at this time [s]")
    r.add_argument("--restore-s", type=float, default=None, help="checkpoint/restore delay [s]")
    r.add_argument(
        "--elastic",
        default=None,
        metavar="RULE",
        help="device-count bounds of the trace's rigid jobs, LO-HI, e.g. x0.5-x2 or 1-8"
        " (docs/elastic.md); default: as the trace says",
    )
    r.add_argument(
        "--aux-demand",
        default=None,
        metavar="RULE",
        help="CPU/memory demand of jobs the trace gives none: none, synergy, proportional,"
        " per-gpu:C,M (C cores, M GB per device), or ignore (drop all demands);"
        " docs/resources.md. Default: none (the trace's demands only)",
    )
    r.add_argument(
        "--synergy-models",
        nargs="?",
        const="20,70,10",
        default=None,
        metavar="I,L,S",
        help="give jobs without a job type one of Synergy's ten profiled models, by its"
        " simulator's rule with I/L/S percent image/language/speech (default 20,70,10);"
        " docs/synergy-fidelity.md",
    )
    r.add_argument(
        "--compat",
        default=None,
        metavar="NAME",
        help="model only what reference simulator NAME models (gavel, tiresias, pollux,"
        " synergy), to compare with its numbers",
    )
    r.add_argument("--gavel-compat", action="store_true", help="alias of --compat gavel")
    r.add_argument(
        "--start", default="2023-01-01T00:00:00Z", help="calendar time of t=0 (carbon hours)"
    )
    r.add_argument(
        "--horizon-hours",
        type=float,
        default=None,
        metavar="H",
        help="cost horizon for the owned-cluster cost [h] (default: the trace's arrival span,"
        " at least 1 h); give the same value to every run you compare (docs/metrics.md)",
    )
    r.add_argument(
        "--failures",
        action="store_true",
        help="nodes fail and are repaired (per-pool mtbf_hours/repair_hours of the spec, else"
        " documented defaults); killed jobs restart from their last checkpoint"
        " (docs/failures.md)",
    )
    r.add_argument(
        "--mtbf-hours", type=float, default=None, help="with --failures: every node's MTBF [h]"
    )
    r.add_argument(
        "--repair-hours",
        type=float,
        default=None,
        help="with --failures: every node's mean repair time [h]",
    )
    r.add_argument(
        "--checkpoint-interval-s",
        type=float,
        default=None,
        help="with --failures or --spot: computing between two checkpoints of a job [s]"
        " (default 3600)",
    )
    r.add_argument(
        "--checkpoint-overhead-s",
        type=float,
        default=None,
        help="with --failures or --spot: time one checkpoint costs a job [s] (default 60)",
    )
    r.add_argument(
        "--spot",
        action="store_true",
        help="the spec's spot pools lose nodes at their spot_reclaim_hours and get them back"
        " after spot_return_hours; a job whose checkpoint fits in the notice keeps its work"
        " (docs/failures.md, 'Spot capacity')",
    )
    r.add_argument(
        "--spot-trace",
        default=None,
        metavar="FILE",
        help="spot reclaims from a CSV of node,reclaimed_at_s,returned_at_s (implies --spot;"
        " nodes numbered pool by pool from 0)",
    )
    r.add_argument(
        "--slow-share",
        type=float,
        default=None,
        help="stragglers: this share of the nodes (0..1, drawn from --seed) runs at"
        " --slow-speed, and a gang touching one runs at its pace (docs/failures.md)",
    )
    r.add_argument(
        "--slow-speed",
        type=float,
        default=None,
        help="with --slow-share: pace of a slow node, 0 < speed <= 1 (default 0.5)",
    )
    r.add_argument(
        "--avoid-slow",
        action="store_true",
        help="with --slow-share: place gangs on fast nodes when they can hold them",
    )
    r.add_argument(
        "--network",
        action="store_true",
        help="multi-node jobs share NICs and rack uplinks (max-min fair); their rates follow"
        " their shares (docs/network.md)",
    )
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.add_argument("--out", help="write per-job results (.csv or .parquet)")
    r.set_defaults(func=cmd_run)
    i = sub.add_parser("inspect", help="read a trace and print its parse report")
    i.add_argument("file", help="trace file (plain, .gz, .bz2, .xz, .zip, .tar.gz)")
    i.add_argument("--format", default=None, help="trace format (default: auto-detect)")
    i.add_argument("--member", default=None, help="file to read inside a zip or tar archive")
    i.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help='reader option, value as JSON when it parses, e.g. statuses=["Pass"]',
    )
    i.add_argument("--json", action="store_true", help="print the report as one JSON object")
    i.set_defaults(func=cmd_inspect)
    sy = sub.add_parser("synth", help="generate a synthetic workload (job-table CSV)")
    sy.add_argument("--jobs", type=int, default=None, help="number of jobs")
    sy.add_argument(
        "--elastic",
        default=None,
        metavar="RULE",
        help="min_gpus/max_gpus of every job, LO-HI, e.g. x0.5-x2 (docs/elastic.md)",
    )
    sy.add_argument("--duration-s", type=float, default=None, help="arrivals before this time")
    sy.add_argument("--arrival", choices=("poisson", "diurnal"), default=None)
    sy.add_argument("--rate", type=float, default=None, help="mean arrivals per hour")
    sy.add_argument("--amplitude", type=float, default=0.5, help="diurnal amplitude (0-1)")
    sy.add_argument("--peak-hour", type=float, default=14.0, help="diurnal peak hour of day")
    sy.add_argument("--start-hour", type=float, default=0.0, help="hour of day at t=0")
    sy.add_argument("--fit", default=None, help="fit sizes, durations and rate to this trace")
    sy.add_argument("--format", default=None, help="format of --fit (default: auto-detect)")
    sy.add_argument("--duration-model", choices=("lognormal", "empirical"), default="lognormal")
    sy.add_argument("--single-gpu", action="store_true", help="Gavel model: 1-GPU jobs only")
    sy.add_argument("--no-job-types", action="store_true", help="generic jobs only")
    sy.add_argument("--seed", type=int, default=0)
    sy.add_argument("--out", required=True, help="output CSV (read back with --format csv)")
    sy.set_defaults(func=cmd_synth)
    ic = sub.add_parser("import-cluster", help="import a node list as a cluster spec")
    ic.add_argument("file", help="kubectl get nodes -o json, scontrol show node, Alibaba CSV")
    ic.add_argument("--format", choices=("kubectl", "slurm", "pai", "openb", "spot"))
    ic.add_argument(
        "--alias", action="append", default=[], metavar="NAME=TYPE", help="map a model name"
    )
    ic.add_argument("--name", default=None, help="cluster name (default: file stem)")
    ic.add_argument("--nodes-per-rack", type=int, default=None)
    ic.add_argument("--out", default=None, help="write the spec JSON here (default: stdout)")
    ic.add_argument("--json", action="store_true", help="print report and spec as one object")
    ic.set_defaults(func=cmd_import_cluster)
    sh = sub.add_parser(
        "sharing", help="GPU-sharing placement study (FGD paper): allocated GPU share per placement"
    )
    sh.add_argument("--nodes", required=True, help="openb node list CSV")
    sh.add_argument("--pods", required=True, help="openb pod list CSV")
    sh.add_argument(
        "--placement",
        default="fgd",
        help="fgd, best-fit, dot-product, gpu-packing, gpu-clustering, random-fit or all",
    )
    sh.add_argument("--seed", type=int, default=42, help="shuffle, top-up and random-fit seed")
    sh.add_argument(
        "--order",
        choices=("inflation", "arrival"),
        default="inflation",
        help="inflation: the FGD paper's shuffled, topped-up workload; arrival: creation order",
    )
    sh.add_argument(
        "--tune", type=float, default=1.3, help="inflation: top up to this times the GPU capacity"
    )
    sh.add_argument("--json", action="store_true", help="print one JSON object")
    sh.set_defaults(func=cmd_sharing)
    from clustersim.advisor_cli import add_parser as add_advise

    add_advise(sub)
    sub.add_parser("policies", help="list the policy registry").set_defaults(func=cmd_policies)
    sub.add_parser("presets", help="list cluster presets").set_defaults(func=cmd_presets)
    sub.add_parser("formats", help="list trace formats").set_defaults(func=cmd_formats)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ClustersimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

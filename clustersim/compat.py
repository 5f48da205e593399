"""Compatibility modes: run a policy with only what a reference simulator models.

A research simulator leaves things out (checkpoint cost, placement effects, device types) and
reads its inputs its own way. To compare clustersim's numbers with one, ``--compat NAME``
(the CLI, the experiment form and the API) reduces the model to what simulator ``NAME``
models, and nothing else changes. Every mode turns the device-fit check off
(:mod:`clustersim.fit`): none of these simulators models device memory or frameworks.

``gavel``
    Gavel's simulator (stanford-futuredata/gavel, ``scheduler/``, trace mode;
    ``docs/gavel-fidelity.md``): no checkpoint/restore cost, every gang at its consolidated
    rate whatever its placement, and each round a job does whole steps only (``floor(rate ×
    round)``) and idles after them.
``tiresias``
    Tiresias's simulator (SymbioticLab/Tiresias, ``simulator/``;
    ``docs/tiresias-fidelity.md``): a job runs for its trace duration, read in whole seconds
    (``int(float(duration))``), on any devices (the simulator knows no device types and no
    placement effect on speed); submit times in whole seconds; no preemption cost; the
    policy's own simulator rules (``CompatSpec.params``, e.g. Tiresias's whole-second queue
    checks) and the simulator's placement for that policy (``yarn`` for FIFO by default,
    ``first-fit`` for counting only; Tiresias's ``dlas-gpu`` counts GPUs and ignores nodes).
``pollux``
    Pollux's simulator (petuum/adaptdl ``simulator/``, branch ``osdi21-artifact``;
    ``docs/pollux-fidelity.md``): every job is one of Pollux's six profiled models and runs
    at its goodput from the profiles; one accelerator type with at most 4 devices a node;
    a 30-s delay on every first start, restart and resize; decisions on the simulator's
    60-s steps only (arrivals and freed devices wait for the next step); the policy's own
    rules of that simulator (``CompatSpec.params``, e.g. ``pollux``'s linear speedups
    before a job has run), its device-count bounds (``CompatSpec.elastic``: ``1-64`` for
    ``pollux``) and its batch sizes (``CompatSpec.engine``: the baselines ``tiresias`` and
    ``optimus`` run every job at its trace's batch size).
``synergy``
    Synergy's simulator (msr-fiddle/synergy, ``simulator/``; ``docs/synergy-fidelity.md``):
    a job runs at its consolidated rate whatever its placement (every profile's placement
    penalty is 1; on the reference type a trace job runs its duration, a job of Synergy's own
    trace format on V100 its iterations × iteration time) at the GPU-proportional share,
    faster or slower only by its CPU/memory allocation; no preemption cost; jobs without a
    type get a Synergy model by its simulator's rule
    (:func:`clustersim.aux_speed.assign_synergy_models`, split 20/70/10 image, language,
    speech) and jobs without a CPU/memory demand the GPU-proportional share of its servers
    (``--aux-demand synergy``); the cluster must give its nodes cores and memory.

Which policies a mode covers is declared by the policies themselves (:attr:`Policy.compat
<scheduling.base.Policy.compat>`); asking a mode for a policy it does not cover, or for a
placement its simulator does not have for that policy, is an error naming both, never a
silent fallback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from clustersim.cluster import Cluster
from clustersim.errors import ClustersimError
from clustersim.jobs import JobTable
from clustersim.perf import JobRates, PerformanceModel

if TYPE_CHECKING:
    from scheduling.base import Placement, Policy


@dataclass(frozen=True)
class CompatMode:
    """What one reference simulator models.

    Attributes
    ----------
    name
        Mode name (``--compat NAME``).
    reference
        The simulator: repository and directory.
    doc
        The note that states its rules.
    whole_steps_per_round
        Engine option (:class:`clustersim.engine.EngineOptions`).
    durations
        Jobs run for their work in reference seconds on any devices: the simulator replays
        durations and has no device types.
    whole_seconds
        With ``durations``: work and submit times are read in whole seconds.
    synergy_jobs
        Jobs get Synergy models and CPU/memory demands (module doc, ``synergy``).
    profiled
        Every job must be one of Pollux's profiled models (:mod:`clustersim.goodput`) and
        the cluster one accelerator type of at most 4 devices a node: the simulator knows
        nothing else.
    step_s
        The simulator advances in steps of this many seconds and decides only at them
        (engine option ``decision_grid_s``); 0: event-driven.
    restore_s
        Delay (s) of every resume and resize, and, for a ``profiled`` mode, of first starts
        too (engine option ``goodput_start_s``): the simulator's own, fixed.
    """

    name: str
    reference: str
    doc: str
    whole_steps_per_round: bool = False
    durations: bool = False
    profiled: bool = False
    step_s: float = 0.0
    restore_s: float = 0.0
    whole_seconds: bool = True
    synergy_jobs: bool = False


MODES: dict[str, CompatMode] = {
    m.name: m
    for m in (
        CompatMode(
            "gavel",
            "stanford-futuredata/gavel, scheduler/ (trace mode)",
            "docs/gavel-fidelity.md",
            whole_steps_per_round=True,
        ),
        CompatMode(
            "tiresias",
            "SymbioticLab/Tiresias, simulator/",
            "docs/tiresias-fidelity.md",
            durations=True,
        ),
        CompatMode(
            "pollux",
            "petuum/adaptdl, simulator/ (osdi21-artifact)",
            "docs/pollux-fidelity.md",
            profiled=True,
            step_s=60.0,
            restore_s=30.0,
        ),
        CompatMode(
            "synergy",
            "msr-fiddle/synergy, simulator/",
            "docs/synergy-fidelity.md",
            synergy_jobs=True,
        ),
    )
}


def mode(name: str) -> CompatMode:
    """The compatibility mode ``name``; :class:`ClustersimError` naming the known ones."""
    try:
        return MODES[name]
    except KeyError:
        raise ClustersimError(
            f"unknown compatibility mode {name!r}; known: {', '.join(sorted(MODES))}"
        ) from None


def policies_of(name: str) -> list[str]:
    """Names of the registered policies that compatibility mode ``name`` covers."""
    from scheduling.registry import POLICIES

    return sorted(p for p, cls in POLICIES.items() if name in cls.compat)


def resolve(
    policy: str,
    params: dict[str, Any] | None = None,
    placement: str | None = None,
    compat: str | None = None,
) -> tuple[dict[str, Any], str]:
    """The hyper-parameters and placement of ``policy`` in mode ``compat`` (``None``: the full
    model), checked: :class:`ClustersimError` names the mode and the policy or placement it
    does not have, or an unknown policy or placement."""
    from scheduling.registry import PLACEMENTS, POLICIES

    if policy not in POLICIES:
        raise ClustersimError(f"unknown policy {policy!r}; known: {', '.join(sorted(POLICIES))}")
    kwargs: dict[str, Any] = {}
    if compat:
        m = mode(compat)
        spec = POLICIES[policy].compat.get(m.name)
        if spec is None:
            raise ClustersimError(
                f"--compat {m.name} does not cover policy {policy!r} ({m.reference} has no such"
                f" policy); it covers: {', '.join(policies_of(m.name))}"
            )
        kwargs.update(spec.params)
        if spec.placements:
            if not placement:
                placement = spec.placements[0]
            elif placement not in spec.placements:
                raise ClustersimError(
                    f"--compat {m.name} has no placement {placement!r} for policy {policy!r}"
                    f" (its simulator's: {', '.join(spec.placements)})"
                )
    placement = placement or "consolidate"
    if placement not in PLACEMENTS:
        raise ClustersimError(
            f"unknown placement {placement!r}; known: {', '.join(sorted(PLACEMENTS))}"
        )
    kwargs.update(params or {})
    return kwargs, placement


@dataclass(frozen=True)
class Prepared:
    """Everything :func:`clustersim.engine.simulate` needs for one run, after the mode.

    Attributes
    ----------
    jobs, rates
        The workload (as the reference reads it) and its rates on the cluster.
    policy, placement
        Instances, hyper-parameters set.
    engine
        Keyword arguments for :class:`clustersim.engine.EngineOptions`.
    """

    jobs: JobTable
    rates: JobRates
    policy: Policy
    placement: Placement
    engine: dict[str, Any] = field(default_factory=dict)


def prepare(
    jobs: JobTable,
    cluster: Cluster,
    policy: str,
    params: dict[str, Any] | None = None,
    placement: str | None = None,
    compat: str | None = None,
    restore_s: float | None = None,
) -> Prepared:
    """Build the policy, placement and rates of a run, in compatibility mode ``compat``.

    Parameters
    ----------
    jobs, cluster
        The workload and the inventory.
    policy, params
        Registered policy name and hyper-parameters (the mode's own parameters for the
        policy come first; ``params`` is applied on top).
    placement
        Registered placement name; ``None``: the mode's default for the policy, else
        ``consolidate``.
    compat
        Compatibility mode name, or ``None`` for the full model.
    restore_s
        Checkpoint/restore delay override (s); refused with a mode, whose simulator fixes it.

    Raises
    ------
    ClustersimError
        Unknown policy, placement or mode; a mode asked for a policy or placement its
        simulator does not have; a workload the mode's simulator cannot read.
    """
    from scheduling.registry import make_placement, make_policy

    kwargs, placement = resolve(policy, params, placement, compat)
    perf_kw: dict[str, Any] = {}
    engine: dict[str, Any] = {}
    m = mode(compat) if compat else None
    if m is not None:
        if restore_s is not None:
            fixed = (
                f"at {m.restore_s:g} s (its simulator's)"
                if m.restore_s
                else "at 0 s (its simulator has none)"
            )
            raise ClustersimError(
                f"--compat {m.name} fixes the checkpoint/restore delay {fixed}; leave out the"
                " restore delay"
            )
        perf_kw.update(restore_s=m.restore_s, placement_aware=False, fit_check=False)
        engine["whole_steps_per_round"] = m.whole_steps_per_round
        if m.step_s:
            engine["decision_grid_s"] = m.step_s
        if m.profiled:
            engine["goodput_start_s"] = m.restore_s
    elif restore_s is not None:
        perf_kw["restore_s"] = restore_s
    try:
        pol = make_policy(policy, **kwargs)
        where = make_placement(placement)
    except (KeyError, TypeError, ValueError) as exc:
        raise ClustersimError(str(exc).strip('"')) from None
    if m is not None and m.synergy_jobs:
        jobs = _synergy_jobs(jobs, cluster, m)
    if m is not None and m.durations and m.whole_seconds:
        jobs = _whole_seconds(jobs, m)
    if m is not None and m.profiled:
        _check_profiled(jobs, cluster, m)
    if m is not None:
        from clustersim.elastic import apply_elastic
        from scheduling.registry import POLICIES

        spec = POLICIES[policy].compat[m.name]
        if spec.elastic:
            jobs, _ = apply_elastic(jobs, spec.elastic, cluster)
        engine.update(spec.engine)
    rates = PerformanceModel(**perf_kw).prepare(jobs, cluster)
    if m is not None and m.durations:
        if not rates.generic.all():
            j = int(np.flatnonzero(~rates.generic)[0])
            raise ClustersimError(
                f"--compat {m.name}: job {jobs.job_id[j]!r} has work in steps of a measured job"
                f" type ({jobs.job_type[j]!r}); {m.reference} replays durations only"
            )
        rates = JobRates(
            rate=np.where(rates.rate > 0, 1.0, 0.0),
            restore_s=np.zeros(len(jobs)),
            extrapolated=rates.extrapolated,
            generic=rates.generic,
            measured=np.zeros_like(rates.rate, dtype=bool),
            ref_gpu_s=rates.ref_gpu_s,
            notes=(*rates.notes, f"--compat {m.name}: every job runs for its duration"),
        )
    return Prepared(jobs, rates, pol, where, engine)


def _synergy_jobs(jobs: JobTable, cluster: Cluster, m: CompatMode) -> JobTable:
    """Synergy's models for jobs without a type, the GPU-proportional share of its servers
    for jobs without a CPU/memory demand; the cluster must limit cores and memory."""
    from clustersim.aux_speed import assign_synergy_models
    from clustersim.resources import apply_demand

    if not (np.isfinite(cluster.node_cpu).any() and np.isfinite(cluster.node_mem).any()):
        raise ClustersimError(
            f"--compat {m.name}: the cluster's nodes give no cpu_cores or host_mem_gb;"
            f" {m.reference} allocates both (its servers: 8 GPUs, 24 cores, 500 GB)"
        )
    return apply_demand(assign_synergy_models(jobs), "synergy")


def _whole_seconds(jobs: JobTable, m: CompatMode) -> JobTable:
    """Submit times and work read in whole seconds, as ``int(float(x))`` does."""
    work = np.trunc(jobs.work)
    short = work < 1
    if short.any():
        j = int(np.flatnonzero(short)[0])
        raise ClustersimError(
            f"--compat {m.name}: job {jobs.job_id[j]!r} lasts {jobs.work[j]:g} s, which"
            f" {m.reference} reads as 0 s; it cannot replay jobs shorter than a second"
        )
    submit = np.trunc(jobs.submit_time)
    if np.array_equal(work, jobs.work) and np.array_equal(submit, jobs.submit_time):
        return jobs
    return jobs.replace(work=work, submit_time=submit)


def _check_profiled(jobs: JobTable, cluster: Cluster, m: CompatMode) -> None:
    """Refuse what Pollux's simulator cannot run: a job not of a profiled model, more than
    one accelerator type, a node of more than 4 devices."""
    from clustersim.goodput import NODE_GPUS, load

    names = np.unique(jobs.job_type).tolist()
    missing = [str(n) for n in names if load(str(n)) is None]
    if missing:
        j = int(np.flatnonzero(np.isin(jobs.job_type, missing))[0])
        raise ClustersimError(
            f"--compat {m.name}: job {jobs.job_id[j]!r} is of type {jobs.job_type[j]!r},"
            f" not one of the profiled models {m.reference} runs"
            " (bert, cifar10, deepspeech2, imagenet, ncf, yolov3)"
        )
    if cluster.n_types != 1:
        raise ClustersimError(
            f"--compat {m.name}: the cluster has {cluster.n_types} accelerator types;"
            f" {m.reference} models one"
        )
    if len(cluster.node_devices) and int(cluster.node_devices.max()) > NODE_GPUS:
        raise ClustersimError(
            f"--compat {m.name}: a node holds {int(cluster.node_devices.max())} devices;"
            f" {m.reference} has at most {NODE_GPUS} a node"
        )

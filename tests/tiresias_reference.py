"""An executable restatement of the Tiresias simulator (test oracle).

SymbioticLab/Tiresias, ``simulator/`` (``run_sim.py``, ``jobs.py``, ``cluster.py``,
``switch.py``, ``flags.py``), schedules ``fifo`` (``one_queue_fifo_sim_jobs``) and ``dlas-gpu``
(``dlas_sim_jobs(gputime=True, solve_starvation=K)``; ``dlas-gpu-K`` sets ``K``), placement
schemes ``yarn`` (its default) and ``count``. Written in our own words from the rules in
``docs/tiresias-fidelity.md``, which cite the simulator's code; plain Python, one job a dict,
slow on purpose (every event walks every job, as the simulator does), so that it reads like the
rules. Times are whole seconds throughout, as in the simulator.

The simulator is Python 2 code: ``(limit - executed) / num_gpu`` in its jump estimate is an
integer (floor) division there; ``py3_division=True`` gives what it computes when run under
Python 3 (true division, then ``ceil``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

INF = float("inf")


@dataclass(frozen=True)
class Spec:
    """A Tiresias ``cluster_spec.csv``: switches × nodes per switch × GPUs per node."""

    switches: int
    nodes_per_switch: int
    gpus_per_node: int

    @property
    def gpus(self) -> int:
        return self.switches * self.nodes_per_switch * self.gpus_per_node


@dataclass
class Job:
    """One trace row (``job_id, num_gpu, submit_time, duration``; whole seconds)."""

    job_id: str
    num_gpu: int
    submit: int
    duration: int
    start: float = INF
    end: float = INF
    preempt: int = 0
    promote: int = 0
    # dlas state
    status: str = "ADDED"
    q: int = 0
    last_check: int = 0
    total_exec: int = 0
    exec: int = 0  # executed time since the job last entered queue 0
    pending_time: int = 0
    last_pending: int = 0
    placement: list[tuple[int, int, int]] = field(default_factory=list)

    @property
    def jct(self) -> float:
        return self.end - self.submit


def load(rows: list[tuple[str, int, int, int]]) -> list[Job]:
    """Jobs from ``(job_id, num_gpu, submit, duration)`` rows, sorted stably by submit."""
    jobs = [Job(str(i), int(g), int(s), int(d)) for i, g, s, d in rows]
    jobs.sort(key=lambda j: j.submit)
    return jobs


class Nodes:
    """Free GPUs per (switch, node) and the two placement schemes."""

    def __init__(self, spec: Spec, scheme: str) -> None:
        self.spec = spec
        self.scheme = scheme
        self.free = [[spec.gpus_per_node] * spec.nodes_per_switch for _ in range(spec.switches)]
        self.count = spec.gpus

    def total_free(self) -> int:
        if self.scheme == "count":
            return self.count
        return sum(sum(s) for s in self.free)

    def place(self, job: Job) -> bool:
        need = job.num_gpu
        if self.scheme == "count":
            if self.count >= need:
                self.count -= need
                return True
            return False
        gpn = self.spec.gpus_per_node
        for s, nodes in enumerate(self.free):
            if need <= gpn:  # the first node of the switch with room
                for n, f in enumerate(nodes):
                    if f >= need:
                        nodes[n] -= need
                        job.placement = [(s, n, need)]
                        return True
                continue
            full, rest = divmod(need, gpn)  # whole idle nodes, then one for the rest
            idle = [n for n, f in enumerate(nodes) if f == gpn][:full]
            if len(idle) < full:
                continue
            last = -1
            if rest:
                last = next((n for n, f in enumerate(nodes) if n not in idle and f >= rest), -1)
                if last < 0:
                    continue
            job.placement = [(s, n, gpn) for n in idle]
            if rest:
                job.placement.append((s, last, rest))
            for s2, n, g in job.placement:
                self.free[s2][n] -= g
            return True
        return False

    def release(self, job: Job) -> None:
        if self.scheme == "count":
            self.count = min(self.count + job.num_gpu, self.spec.gpus)
            return
        for s, n, g in job.placement:
            self.free[s][n] += g
        job.placement = []


def fifo(jobs: list[Job], spec: Spec, scheme: str = "yarn") -> list[Job]:
    """``one_queue_fifo_sim_jobs``: strict FIFO; returns ``jobs`` with start/end set."""
    nodes = Nodes(spec, scheme)
    events: dict[int, tuple[list[Job], list[Job]]] = {}  # time -> (arrivals, completions)
    for j in jobs:
        events.setdefault(j.submit, ([], []))[0].append(j)
    pending: list[Job] = []
    while events or pending:
        if not events:
            break  # a job no switch can hold blocks the queue for good
        t = min(events)
        arrivals, done = events.pop(t)
        for j in done:
            nodes.release(j)
            j.end = t
        pending.extend(arrivals)
        if nodes.total_free() > 0:
            started = []
            for j in pending:
                if not nodes.place(j):
                    break
                started.append(j)
            for j in started:
                pending.remove(j)
                j.start = t
                events.setdefault(t + j.duration, ([], []))[1].append(j)
    return jobs


def dlas_gpu(
    jobs: list[Job],
    spec: Spec,
    limits: tuple[int, ...] = (3250, 7200),
    knob: float = 0,
    py3_division: bool = False,
    stale_ends: bool = True,
) -> list[Job]:
    """``dlas_sim_jobs(gputime=True, solve_starvation=knob)``; returns ``jobs`` with
    start/end set. ``limits``: the thresholds of the ``len(limits) + 1`` queues.

    ``stale_ends``: the simulator's slip of an arrival event that falls when running jobs are
    due to end (``docs/tiresias-fidelity.md`` §4.5): it attaches those jobs to the arrival
    event, and if a queue check comes first and preempts one of them, the arrival still ends
    it. ``False`` leaves that out (what ``--compat tiresias`` models)."""
    nq = len(limits) + 1
    queues: list[list[Job]] = [[] for _ in range(nq)]
    runnable: list[Job] = []
    arrivals: dict[int, list[Job]] = {}
    for j in jobs:
        arrivals.setdefault(j.submit, []).append(j)
    start_times = sorted(arrivals)
    end_time, ending = INF, []
    jump = INF
    attached: dict[int, list[Job]] = {}  # ending jobs attached to an arrival event
    while start_times or runnable:
        if not start_times and end_time == INF:
            break  # only jobs larger than the cluster are left
        st = start_times[0] if start_times else INF
        t = min(st, end_time)
        if st == end_time != INF:
            attached[st] = ending
        if t > jump:  # a queue change is due first
            t, new, done = jump, [], []
        else:
            new = arrivals[start_times.pop(0)] if st == t else []
            if end_time == t:
                done = ending
            elif stale_ends and st == t:
                done = attached.get(st, [])
            else:
                done = []
            if any(j.status == "END" for j in done):
                raise ValueError("the simulator would fail here: it ends a job twice")
        for j in done:
            j.end = t
            j.status = "END"
            runnable.remove(j)
            queues[j.q].remove(j)
        for j in new:
            j.status, j.q, j.last_check = "PENDING", 0, j.submit
            runnable.append(j)
            queues[0].append(j)
        for j in runnable:  # service, demotion, pending time, promotion
            dt = int(t - j.last_check)
            j.last_check = int(t)
            if j.status == "RUNNING":
                j.total_exec += dt
                j.exec += dt
                if j.q < nq - 1 and j.exec * j.num_gpu >= limits[j.q]:
                    queues[j.q].remove(j)
                    j.q += 1
                    queues[j.q].append(j)
            else:
                j.pending_time += dt
                if j.exec > 0:
                    j.last_pending += dt
                if (
                    knob > 0
                    and j.q > 0
                    and j.total_exec > 0
                    and j.exec > 0
                    and j.last_pending >= int(j.exec * knob)
                ):
                    queues[j.q].remove(j)
                    j.q, j.exec, j.last_pending = 0, 0, 0
                    j.promote += 1
                    queues[0].append(j)
        free = spec.gpus  # count GPUs along the queues; skip what does not fit
        start, stop = [], []
        for queue in queues:
            for j in queue:
                if free >= j.num_gpu:
                    if j.status == "PENDING":
                        start.append(j)
                    free -= j.num_gpu
                elif j.status == "RUNNING":
                    stop.append(j)
        for j in stop:
            j.status = "PENDING"
            j.preempt += 1
        for j in start:
            j.status = "RUNNING"
            if j.start == INF:
                j.start = t
        for queue in queues:  # running jobs ahead of waiting ones, each in its order
            queue[:] = [j for j in queue if j.status == "RUNNING"] + [
                j for j in queue if j.status == "PENDING"
            ]
        end_time, ending = INF, []
        for j in runnable:
            if j.status == "RUNNING":
                e = t + j.duration - j.total_exec
                if e < end_time:
                    end_time, ending = e, [j]
                elif e == end_time:
                    ending.append(j)
        jump = INF
        for j in runnable:
            if j.status == "RUNNING" and j.q < nq - 1:
                # GPU-time left divided by the gang size, the executed *time* taken for the
                # executed GPU-time (the simulator's own estimate, kept as it is)
                if py3_division:
                    step = math.ceil((limits[j.q] - j.exec) / j.num_gpu)
                else:
                    step = (limits[j.q] - j.exec) // j.num_gpu
                jump = min(jump, t + step)
            elif j.status == "PENDING" and knob > 0 and j.q > 0 and j.total_exec and j.exec > 0:
                diff = int(j.exec * knob - j.last_pending)
                if diff > 0:
                    jump = min(jump, t + diff)
    return jobs


def average_jct(jobs: list[Job]) -> float:
    """Mean JCT over the jobs that completed (what the simulator's ``job.csv`` holds)."""
    done = [j.jct for j in jobs if j.end < INF]
    return sum(done) / len(done)

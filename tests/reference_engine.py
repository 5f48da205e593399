"""A slow, obviously-correct reference engine for differential tests.

Plain Python, one dict per job, everything recomputed at every step. It implements the same
semantics as :mod:`clustersim.engine` for clusters with one node per accelerator type (so
placement cannot matter) and rates that do not depend on placement:

* all events at the same instant form one batch: completions, then arrivals, then one policy
  call (skipped for non-preemptive policies when nothing is free or nothing is queued);
* round-based policies are also called at every round boundary; every policy at the time
  its last decision's ``wake_at`` named, and when a running job's attained service reaches
  the next of the policy's ``service_marks``;
  with ``rounds_only`` the rounds are relative: an idle cluster starts a round at the next
  arrival, a round whose jobs have all finished ends there, and otherwise a round lasts
  ``round_s`` from its start; with ``rounds_on_grid`` the policy is called only at the
  fixed grid's boundaries (never at arrivals or completions in between);
* non-preemptive decisions start listed queued jobs in order (stopping at the first that
  does not fit when the policy is blocking); preemptive decisions choose, in order, the jobs
  that fit by device count (a running job keeps its type), suspend the other running jobs,
  and start the chosen ones;
* a resumed job makes no progress for its restore delay (the policy's ``resume_s`` when set);
* jobs a policy drops are stopped and never finish;
* a policy that splices replicas (``Policy.splicing``, :func:`clustersim.elastic.splice`)
  has the jobs' ``min_gpus`` lowered to their smallest spliced count, and a job on ``d``
  devices fewer than its ``w = num_gpus`` runs at ``d / w × (1 − overhead)`` of its rate; a
  running job restarted on another count in one decision is a resize, not a preemption.
"""

from __future__ import annotations

import math

import numpy as np

from clustersim.cluster import Cluster
from clustersim.jobs import JobTable
from clustersim.perf import JobRates
from scheduling.base import SERVICE_EPS, Policy, State


def reference_simulate(
    jobs: JobTable, cluster: Cluster, policy: Policy, rates: JobRates, seed: int = 0
) -> dict[str, list[float]]:
    assert np.all(np.bincount(cluster.node_type) == 1), "one node per type only"
    splicing = policy.splicing
    if splicing is not None:
        from clustersim.elastic import splice

        jobs, _ = splice(jobs, rates, splicing)
    n, nt = len(jobs), cluster.n_types
    cap = [int(x) for x in cluster.devices_per_type()]
    free = list(cap)
    policy_ss, _ = np.random.SeedSequence(seed).spawn(2)
    policy.reset(np.random.default_rng(policy_ss))
    J = [
        {
            "submit": float(jobs.submit_time[i]),
            "gpus": int(jobs.num_gpus[i]),
            "rem": float(jobs.work[i]),
            "type": -1,
            "n": 0,
            "stall": 0.0,
            "rate": 0.0,
            "att": 0.0,
            "exe": 0.0,
            "tt": [0.0] * nt,
            "first": math.nan,
            "last": math.nan,
            "finish": math.nan,
            "pre": 0,
            "resizes": 0,
            "arrived": False,
            "runnable": any(rates.rate[i, t] > 0 and jobs.min_gpus[i] <= cap[t] for t in range(nt)),
        }
        for i in range(n)
    ]
    now = min((j["submit"] for j in J if j["runnable"]), default=0.0)
    round_s = policy.round_s
    relative = bool(round_s) and policy.rounds_only
    next_round = math.ceil(now / round_s) * round_s if round_s and not relative else math.inf
    wake = math.inf
    rounds = 0  # round boundaries passed (State.round_index)

    def active() -> list[int]:
        return [
            i
            for i, j in enumerate(J)
            if j["arrived"] and math.isnan(j["finish"]) and not j.get("dropped")
        ]

    def state() -> State:
        a = np.array(active(), dtype=np.int64)
        return State(
            now=now,
            jobs=jobs,
            cluster=cluster,
            active=a,
            running=np.array([j["type"] >= 0 for j in J]),
            alloc_type=np.array([j["type"] for j in J], dtype=np.int64),
            alloc_n=np.array([j["n"] for j in J], dtype=np.int64),
            rate=rates.rate,
            first_start=np.array([j["first"] for j in J]),
            last_start=np.array([j["last"] for j in J]),
            preemptions=np.array([j["pre"] for j in J], dtype=np.int64),
            free=np.array(free, dtype=np.int64),
            capacity=np.array(cap, dtype=np.int64),
            remaining=np.array([j["rem"] for j in J]),
            attained=np.array([j["att"] for j in J]),
            executed=np.array([j["exe"] for j in J]),
            type_time=np.array([j["tt"] for j in J]).reshape(n, nt),
            round_index=rounds,
            pending=sum(1 for j in J if not j["arrived"] and j["runnable"]),
            job_rates=rates,
        )

    def start(i: int, t: int, nd: int) -> None:
        j = J[i]
        free[t] -= nd
        resumed = not math.isnan(j["first"])
        share = 1.0
        if splicing is not None and nd < j["gpus"]:
            share = nd / j["gpus"] * (1.0 - splicing.overhead)
        j.update(type=t, n=nd, last=now, rate=float(rates.rate[i, t]) * share)
        restore = float(rates.restore_s[i]) if policy.resume_s is None else policy.resume_s
        j["stall"] = now + (restore if resumed else 0.0)
        if not resumed:
            j["first"] = now

    def stop(i: int) -> None:
        j = J[i]
        free[j["type"]] += j["n"]
        j.update(type=-1, n=0)

    def fastest(i: int, nd: int, room: list[int]) -> int:
        best, bt = -1.0, -1
        for t in range(nt):
            r = float(rates.rate[i, t])
            if r > 0 and room[t] >= nd and r > best:
                best, bt = r, t
        return bt

    def apply_decision(run: list[int], types: list[int], nds: list[int]) -> None:
        if not policy.preemptive:
            for i, want, nd in zip(run, types, nds, strict=True):
                if J[i]["type"] >= 0:
                    continue
                t = want if want >= 0 else fastest(i, nd, free)
                if t < 0 or free[t] < nd:
                    if policy.blocking:
                        break
                    continue
                start(i, t, nd)
            return
        left = list(cap)
        target = []
        for i, want, nd in zip(run, types, nds, strict=True):
            cur = J[i]["type"]
            if want >= 0:
                t = want if rates.rate[i, want] > 0 else -1
            elif cur >= 0 and J[i]["n"] == nd and left[cur] >= nd:
                t = cur
            else:
                t = fastest(i, nd, left)
            if t < 0 or left[t] < nd:
                if policy.blocking:
                    break
                continue
            left[t] -= nd
            target.append((i, t, nd))
        keep = {i for i, t, nd in target if J[i]["type"] == t and J[i]["n"] == nd}
        count = {i: nd for i, t, nd in target}
        for i in [i for i, j in enumerate(J) if j["type"] >= 0]:
            if i not in keep:
                if i in count and count[i] != J[i]["n"]:
                    J[i]["resizes"] += 1  # restarted on another count: a resize
                else:
                    J[i]["pre"] += 1
                stop(i)
        for i, t, nd in target:
            if i not in keep:
                start(i, t, nd)

    while True:
        running = [i for i, j in enumerate(J) if j["type"] >= 0]
        fins = [max(now, J[i]["stall"]) + J[i]["rem"] / J[i]["rate"] for i in running]
        t_fin = min(fins, default=math.inf)
        pend = [j["submit"] for j in J if not j["arrived"] and j["runnable"]]
        t_arr = min(pend, default=math.inf)
        has_active = bool(active())
        t_round = next_round if round_s and (has_active or t_arr <= next_round) else math.inf
        t_next = min(t_fin, t_arr, t_round, wake if has_active else math.inf)
        if t_next == math.inf:
            break
        for i in running:  # progress
            j = J[i]
            dt = t_next - now
            j["rem"] -= j["rate"] * max(0.0, t_next - max(now, j["stall"]))
            j["att"] += dt * j["n"]
            j["exe"] += dt
            j["tt"][j["type"]] += dt
        now = t_next
        changed = False
        for i, f in zip(running, fins, strict=True):
            if f <= now + 1e-9 + 1e-12 * abs(now):
                J[i]["rem"] = 0.0
                J[i]["finish"] = now
                stop(i)
                changed = True
        for j in J:
            if not j["arrived"] and j["runnable"] and j["submit"] <= now:
                j["arrived"] = True
                changed = True
        at_round = False
        still = any(j["type"] >= 0 for j in J)
        if round_s and now >= next_round:
            at_round = True
            next_round = math.inf if relative else (math.floor(now / round_s) + 1) * round_s
        if relative and not still and (changed or running):
            at_round = True
            next_round = math.inf
        rounds += at_round
        at_wake = now >= wake
        if at_wake:
            wake = math.inf
        on_grid = relative or (bool(round_s) and policy.rounds_on_grid)
        call = at_round or at_wake or (changed and not on_grid)
        acts = active()
        if not (call and acts):
            continue
        queued = [i for i in acts if J[i]["type"] < 0]
        if not policy.preemptive and not at_round and (sum(free) == 0 or not queued):
            continue
        d = policy.schedule(state())
        for i in [] if d.drop is None else [int(x) for x in d.drop]:
            if J[i]["type"] >= 0:
                stop(i)
            J[i]["dropped"] = True
        wake = d.wake_at if d.wake_at is not None and d.wake_at > now else math.inf
        run = [int(x) for x in d.run]
        types = [-1] * len(run) if d.types is None else [int(x) for x in d.types]
        nds = [J[i]["gpus"] for i in run] if d.ndev is None else [int(x) for x in d.ndev]
        apply_decision(run, types, nds)
        for j in J:  # the next service mark any running job reaches
            above = [m for m in policy.service_marks if j["att"] + SERVICE_EPS < m]
            if j["type"] >= 0 and above:
                w = now + (above[0] - j["att"]) / j["n"]
                if now < w < wake:
                    wake = w
        if relative and at_round and any(j["type"] >= 0 for j in J):
            next_round = now + round_s

    return {
        "finish": [j["finish"] for j in J],
        "first_start": [j["first"] for j in J],
        "preemptions": [float(j["pre"]) for j in J],
        "resizes": [float(j["resizes"]) for j in J],
    }

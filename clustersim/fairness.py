"""Per-user fair share and per-type allocation over time, from a run's stored outcome.

Framework-free (numpy only): the dashboards call these on the per-job table and the device
stints a worker stored, so nothing is re-simulated. Definitions (also in ``docs/metrics.md``,
"Fair share per user"):

Active
    An admitted job is *in the system* on ``[submit, end)``, ``end`` its finish time or, for a
    job left unfinished, the end of the run's timeline. A user (or virtual cluster: any
    grouping label) is *active* at ``t`` when at least one of its jobs is in the system;
    ``A(t)`` is the number of active users.
Fair share
    ``F_u = ∫ [u active at t] × C / A(t) dt`` in device-seconds, ``C`` the cluster's devices:
    an equal split of the whole cluster among the users active at each instant, summed over
    time. It is not capped by what the user asked for, so a user whose few small jobs could
    never use ``C / A`` devices receives less than its fair share under any policy; compare
    policies user by user rather than reading 1 as a target every user can reach.
Received
    ``R_u = Σ attained device-seconds`` of the user's jobs (every device-second they held).
Ratio
    ``R_u / F_u``: 1 means the user held exactly its equal share of the cluster while active.

This follows the "equal 1/N share of the cluster" of Themis (Mahajan et al., NSDI'20, §3),
with users instead of apps as in Gandiva-Fair (Chaudhary et al., EuroSys'20, §3); both papers
count a share in devices of any generation alike, as here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class UserShares:
    """Fair share and received device-time of each user (rows in ``users`` order).

    ``active_s``: seconds the user was active; ``jobs``: its admitted jobs.
    """

    users: list[str]
    received: FloatArray
    fair: FloatArray
    active_s: FloatArray
    jobs: IntArray

    @property
    def ratio(self) -> FloatArray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.fair > 0, self.received / self.fair, np.nan)


def _active_segments(
    codes: IntArray, start: FloatArray, end: FloatArray
) -> tuple[IntArray, FloatArray, FloatArray]:
    """Union of each group's ``[start, end)`` intervals: ``(group, seg_start, seg_end)``."""
    if len(codes) == 0:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    order = np.lexsort((start, codes))
    g, s, e = codes[order], start[order], end[order]
    seg_g: list[int] = []
    seg_s: list[float] = []
    seg_e: list[float] = []
    cur_g, cur_s, cur_e = int(g[0]), float(s[0]), float(e[0])
    for gi, si, ei in zip(g[1:].tolist(), s[1:].tolist(), e[1:].tolist(), strict=True):
        if gi == cur_g and si <= cur_e:
            cur_e = max(cur_e, ei)
            continue
        seg_g.append(cur_g)
        seg_s.append(cur_s)
        seg_e.append(cur_e)
        cur_g, cur_s, cur_e = gi, si, ei
    seg_g.append(cur_g)
    seg_s.append(cur_s)
    seg_e.append(cur_e)
    return np.array(seg_g, np.int64), np.array(seg_s), np.array(seg_e)


def user_shares(
    user: npt.ArrayLike,
    submit: npt.ArrayLike,
    end: npt.ArrayLike,
    attained: npt.ArrayLike,
    capacity: float,
) -> UserShares:
    """Fair share ``F_u`` and received device-time ``R_u`` of each user (module docstring).

    One entry per admitted job: its user label, submit time, end of its time in the system
    (finish, or the end of the timeline if unfinished) and attained device-seconds (NaN
    counts 0). Users are listed in order of first appearance.
    """
    labels = np.asarray(user).astype(str)
    t0 = np.asarray(submit, dtype=np.float64)
    t1 = np.maximum(np.asarray(end, dtype=np.float64), t0)
    got = np.nan_to_num(np.asarray(attained, dtype=np.float64))
    if len(labels) == 0:
        empty = np.zeros(0)
        return UserShares([], empty, empty, empty, np.zeros(0, np.int64))
    uniq, first, codes = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.argsort(first, kind="stable")  # order of first appearance
    relabel = np.empty_like(rank)
    relabel[rank] = np.arange(len(rank))
    codes = relabel[codes.ravel()].astype(np.int64)
    names = [str(x) for x in uniq[rank]]
    k = len(names)
    received = np.bincount(codes, weights=got, minlength=k).astype(np.float64)
    jobs = np.bincount(codes, minlength=k).astype(np.int64)
    live = t1 > t0
    g, s, e = _active_segments(codes[live], t0[live], t1[live])
    fair = np.zeros(k)
    active = np.bincount(g, weights=e - s, minlength=k).astype(np.float64)
    if len(g):
        times = np.unique(np.concatenate([s, e]))
        delta = np.zeros(len(times))
        np.add.at(delta, np.searchsorted(times, s), 1.0)
        np.add.at(delta, np.searchsorted(times, e), -1.0)
        n_active = np.cumsum(delta)[:-1]  # on [times[i], times[i+1])
        with np.errstate(divide="ignore"):
            rate = np.where(n_active > 0, float(capacity) / n_active, 0.0)
        cum = np.r_[0.0, np.cumsum(rate * np.diff(times))]
        per_seg = cum[np.searchsorted(times, e)] - cum[np.searchsorted(times, s)]
        fair = np.bincount(g, weights=per_seg, minlength=k).astype(np.float64)
    return UserShares(names, received, fair, active, jobs)


# -- allocation over time by job class and accelerator type -----------------------------------

#: Job-size classes by gang size, for traces without job types (as the JCT buckets).
SIZE_CLASSES = ((1, 1, "1 GPU"), (2, 4, "2–4 GPUs"), (5, 8, "5–8 GPUs"), (9, None, "9+ GPUs"))

_BATCH = re.compile(r"\s*\((batch size|bs)[^)]*\)\s*$", re.IGNORECASE)


def job_class(job_type: str) -> str:
    """A job type without its batch size (Gavel's ``ResNet-50 (batch size 64)`` → ``ResNet-50``)."""
    return _BATCH.sub("", job_type).strip()


def size_class(num_gpus: npt.ArrayLike) -> list[str]:
    """The size class (:data:`SIZE_CLASSES`) of each gang size."""
    out = []
    for n in np.asarray(num_gpus, dtype=np.int64).tolist():
        for lo, hi, name in SIZE_CLASSES:
            if n >= lo and (hi is None or n <= hi):
                out.append(name)
                break
        else:
            out.append(SIZE_CLASSES[0][2])
    return out


def binned_devices(
    group: IntArray,
    n_groups: int,
    devices: npt.ArrayLike,
    start: npt.ArrayLike,
    end: npt.ArrayLike,
    edges: npt.ArrayLike,
) -> FloatArray:
    """``(n_groups, len(edges) - 1)``: time-averaged devices held in each bin by each group.

    Each stint holds ``devices`` on ``[start, end)``; the average over bin ``[e_i, e_{i+1})``
    is exact (the integral of a piecewise-constant count over the bin, divided by its width).
    """
    x = np.asarray(edges, dtype=np.float64)
    d = np.asarray(devices, dtype=np.float64)
    s = np.asarray(start, dtype=np.float64)
    e = np.maximum(np.asarray(end, dtype=np.float64), s)
    out = np.zeros((n_groups, max(len(x) - 1, 0)))
    if len(x) < 2:
        return out
    width = np.diff(x)
    for gid in range(n_groups):
        mine = group == gid
        if not mine.any():
            continue

        def integral(times: FloatArray, weight: FloatArray, at: FloatArray) -> FloatArray:
            # Σ weight × max(0, at - time) over the given times
            order = np.argsort(times)
            ts, ws = times[order], weight[order]
            cw, ctw = np.r_[0.0, np.cumsum(ws)], np.r_[0.0, np.cumsum(ws * ts)]
            idx = np.searchsorted(ts, at, side="right")
            return np.asarray(cw[idx] * at - ctw[idx], dtype=np.float64)

        h = integral(s[mine], d[mine], x) - integral(e[mine], d[mine], x)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[gid] = np.where(width > 0, np.diff(h) / width, 0.0)
    return out

"""The engine's vectorised in-order fill against the loop it stands for."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from clustersim.engine import _greedy_fill


def naive(d: list[int], cap: int, blocking: bool) -> list[bool]:
    left, out = cap, []
    for x in d:
        if x <= left:
            out.append(True)
            left -= x
        else:
            out.append(False)
            if blocking:
                out.extend([False] * (len(d) - len(out)))
                break
    return out


@settings(max_examples=500, deadline=None)
@given(
    d=st.lists(st.integers(1, 16), max_size=300),
    cap=st.integers(0, 80),
    blocking=st.booleans(),
)
def test_the_fill_takes_what_the_loop_takes(d: list[int], cap: int, blocking: bool) -> None:
    got = _greedy_fill(np.array(d, dtype=np.int64), cap, blocking)
    want = naive(d, cap, blocking)
    assert got.tolist() == [i for i, t in enumerate(want) if t]  # positions, ascending


def test_a_long_queue_of_small_jobs_behind_a_big_one() -> None:
    # the first misfit comes after cap + 1 demands at the latest; the gaps are then filled
    # from far down the queue
    d = np.array([3] * 5 + [8] + [2] * 1000 + [1] * 3, dtype=np.int64)
    got = _greedy_fill(d, 20, blocking=False)
    assert got.tolist() == [i for i, t in enumerate(naive(d.tolist(), 20, False)) if t]
    assert int(d[got].sum()) == 20

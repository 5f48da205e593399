"""The centre tie-break (:func:`scheduling.allocation.optimal_face_centre`) on LPs solved on
paper: when an LP has a whole optimal edge, the centre is a point inside it, not a vertex."""

from __future__ import annotations

import numpy as np
import pytest

from scheduling.allocation import BaseLP, LPSolver, optimal_face_centre
from scheduling.gavel_lp import GavelMaxThroughput, GavelMMF
from tests.test_gavel_lp import allocate, fake_state


@pytest.mark.parametrize(("w", "expected"), [((1.0, 1.0), 0.5), ((2.0, 1.0), 2.0 / 3.0)])
def test_centre_of_an_optimal_edge(w: tuple[float, float], expected: float) -> None:
    # Two jobs, two types, one device each, every throughput 1: maximise Σ X. The optimum 2
    # is reached on the whole edge X = [[a, 1-a], [1-a, a]], 0 <= a <= 1 (both devices and
    # both row sums full). With equal weights the barrier on that edge is
    # 2 (log a + log(1-a)): maximal at the midpoint a = 1/2. To see the weights act, weigh
    # X00 and X11 by w0 and X01 and X10 by w1: then the
    # barrier is 2 w0 log a + 2 w1 log(1-a), maximal at a = w0 / (w0 + w1): 1/2 and 2/3.
    lp = BaseLP(np.ones((2, 2)), np.ones(2), np.ones(2))
    m = lp.model(-np.ones(4))
    res = LPSolver().solve(m)
    assert res.x is not None
    wv = np.array([w[0], w[1], w[1], w[0]])
    v = optimal_face_centre(m, res.x, np.full(4, 0.25), weight_vars=wv)
    assert v is not None
    a = expected
    np.testing.assert_allclose(v.reshape(2, 2), [[a, 1 - a], [1 - a, a]], atol=1e-4)
    assert v.sum() == pytest.approx(2.0, rel=1e-5)  # still optimal


def test_max_throughput_centre_splits_a_tie_the_vertex_does_not() -> None:
    # Job 0 (1 device) and job 1 (2 devices), throughput 1 everywhere, 2 devices of each type:
    # Σ X is 2 at most (row sums); it is reached whenever a0 + a1 = 1 and b0 + b1 = 1 with
    # a0 + 2 b0 <= 2 and a1 + 2 b1 <= 2, i.e. 1 <= a0 + 2 b0 <= 2: a whole face. Swapping the
    # two types maps the face onto itself (a0 -> 1 - a0, b0 -> 1 - b0), so its centre is the
    # fixed point a0 = b0 = 1/2.
    thr = np.ones((2, 2))
    state = fake_state(thr=thr, gpus=(1, 2), cap=(2, 2))
    x = allocate(GavelMaxThroughput(centre=True), state)
    np.testing.assert_allclose(x, 0.5, atol=1e-4)
    vertex = allocate(GavelMaxThroughput(), state)
    assert vertex.sum() == pytest.approx(2.0)
    assert np.abs(vertex - 0.5).max() > 0.1  # HiGHS stops at a vertex of that face


def test_mmf_centre_on_paper() -> None:
    # Throughput 1 everywhere, job 0 on 1 device, job 1 on 2, 2 devices of each type:
    # proportional throughput 1 each, so the level is z = min(a0 + a1, 2 (b0 + b1)) (job 0's
    # row X = (a0, a1), job 1's (b0, b1)). z <= 1 by job 0's row sum and z = 1 is reachable:
    # the optimal face is a0 + a1 = 1, 1/2 <= b0 + b1 <= 1, a0 + 2 b0 <= 2, a1 + 2 b1 <= 2.
    # Its centre is symmetric under swapping the types (a0 = 1/2, b0 = b1 = b) and maximises
    # 2 log b + log(1 - 2b) + 2 log(3/2 - 2b) + log(4b - 1) (the non-negativity of b0, b1,
    # job 1's row sum, the two capacities, job 1's max-min row): the derivative
    # 2/b - 2/(1 - 2b) - 4/(3/2 - 2b) + 4/(4b - 1) vanishes at b = 3/8
    # (16/3 - 8 - 16/3 + 8 = 0).
    thr = np.ones((2, 2))
    state = fake_state(thr=thr, gpus=(1, 2), cap=(2, 2))
    x = allocate(GavelMMF(centre=True), state)
    np.testing.assert_allclose(x, [[0.5, 0.5], [0.375, 0.375]], atol=1e-4)

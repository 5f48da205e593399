"""The allocation-optimisation layer (scheduling/allocation.py): base constraints, HiGHS
wrapper, counters, fallback, job classes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from clustersim.kernels import WF_OK, WF_PIVOT_LIMIT, maxmin_simplex
from scheduling.allocation import (
    STATUS_OPTIMAL,
    BaseLP,
    LPModel,
    LPSolver,
    check_allocation,
    classes_among,
    fallback_allocation,
    isolated_allocation,
    isolated_throughput,
    job_classes,
    maxmin_model,
    proportional_throughput,
)


def test_base_constraints_as_a_dense_matrix() -> None:
    # 2 jobs × 2 types, gangs 1 and 2, 3 and 4 devices; job 1 cannot run on type 1
    thr = np.array([[1.0, 2.0], [3.0, 0.0]])
    lp = BaseLP(thr, np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    m = lp.model(np.zeros(4))
    dense = m.matrix().toarray()
    # variables x00 x01 x10 x11; rows: cap type 0, cap type 1, row sum 0, row sum 1
    assert dense.tolist() == [
        [1, 0, 2, 0],
        [0, 1, 0, 2],
        [1, 1, 0, 0],
        [0, 0, 1, 1],
    ]
    assert m.b.tolist() == [3, 4, 1, 1]
    assert m.lb.tolist() == [0, 0, 0, 0]
    assert m.ub.tolist() == [1, 1, 1, 0]  # the zero-throughput entry is fixed at 0


def test_class_counts_multiply_capacity_use_only() -> None:
    lp = BaseLP(np.ones((1, 2)), np.array([2.0]), np.array([8.0, 8.0]), count=np.array([3.0]))
    dense = lp.model(np.zeros(2)).matrix().toarray()
    assert dense.tolist() == [[6, 0], [0, 6], [1, 1]]


def test_added_job_rows_with_an_extra_variable() -> None:
    lp = BaseLP(np.array([[1.0, 2.0], [3.0, 4.0]]), np.ones(2), np.ones(2), n_extra=1)
    lp.add_job_rows(
        -np.array([[1.0, 2.0], [3.0, 4.0]]), 0.0, which=np.array([1]), extra=np.ones((2, 1))
    )
    m = lp.model(np.zeros(5))
    assert m.matrix().toarray()[-1].tolist() == [0, 0, -3, -4, 1]
    assert m.b[-1] == 0 and m.ub[-1] == np.inf


def _hand_lp() -> tuple[BaseLP, np.ndarray]:
    # maximise 3 a0 + b0 + a1 (max-throughput instance of test_gavel_lp, solved on paper):
    # optimum a0 = 1, objective 3
    thr = np.array([[3.0, 1.0], [1.0, 0.0]])
    lp = BaseLP(thr, np.ones(2), np.ones(2))
    return lp, -thr.ravel()


@pytest.mark.parametrize("backend", ["core", "linprog"])
def test_both_backends_solve_the_hand_instance(backend: str) -> None:
    lp, c = _hand_lp()
    s = LPSolver(backend)
    res = s.solve(lp.model(c))
    assert res.status == STATUS_OPTIMAL and res.ok
    assert res.objective == pytest.approx(-3.0)
    assert res.x is not None
    np.testing.assert_allclose(lp.allocation(res.x), [[1, 0], [0, 0]], atol=1e-9)
    assert s.stats()["lp_solves"] == 1 and s.stats()["lp_solver_s"] > 0


def test_unknown_backend_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match="backend"):
        LPSolver("cplex")


@pytest.mark.parametrize("backend", ["core", "linprog"])
def test_infeasible_lp_reports_status_and_never_raises(backend: str) -> None:
    lp, c = _hand_lp()
    lp.add_job_rows(-lp.thr, -10.0)  # each job needs throughput >= 10: impossible
    s = LPSolver(backend)
    res = s.solve(lp.model(c))
    assert not res.ok and res.x is None and res.status == 2
    assert np.isnan(res.objective)


@pytest.mark.parametrize("backend", ["core", "linprog"])
def test_unbounded_lp_reports_status(backend: str) -> None:
    lp = BaseLP(np.ones((1, 1)), np.ones(1), np.ones(1), n_extra=1)
    c = np.array([0.0, -1.0])  # maximise an unbounded extra variable
    res = LPSolver(backend).solve(lp.model(c))
    assert not res.ok and res.status in (3, 4)


def test_nan_in_the_model_is_a_failed_solve_not_an_exception() -> None:
    lp, c = _hand_lp()
    c[0] = np.nan
    s = LPSolver("linprog")
    res = s.solve(lp.model(c))
    assert not res.ok
    assert s.solves == 1


def test_warm_resolve_gives_the_same_optimum() -> None:
    lp, c = _hand_lp()
    s = LPSolver("core")
    s.solve(lp.model(c))
    c2 = -np.array([1.0, 1.0, 5.0, 0.0])  # now job 1 on type 0 is worth most
    warm = s.solve(lp.model(c2), warm=True)
    cold = LPSolver("core").solve(lp.model(c2))
    assert warm.objective == pytest.approx(cold.objective) == pytest.approx(-6.0)


def test_changed_in_place_model_resolves_to_the_fresh_models_optimum_with_its_duals() -> None:
    # max x0 + x1 s.t. x0 + x1 <= 1, x0 <= 1/2 (rows 0, 1), x >= 0: optimum 1, row 0 tight
    # with dual -1 (HiGHS's sign for a tight <= row of a minimisation), row 1 dual 0.
    # Then x0 + 2 x1 <= 1 and x0 <= 1/4: x1 = 3/8, objective 5/8.
    def model(a: float, b1: float) -> LPModel:
        return LPModel(
            c=-np.ones(2),
            indptr=np.array([0, 2, 3]),
            indices=np.array([0, 1, 0]),
            data=np.array([1.0, 1.0, a]),
            b=np.array([1.0, b1]),
            lb=np.zeros(2),
            ub=np.full(2, np.inf),
        )

    s = LPSolver("core")
    s.load(model(1.0, 0.5))
    first = s.resolve(duals=True)
    assert first.objective == pytest.approx(-1.0)
    assert first.row_dual is not None
    np.testing.assert_allclose(first.row_dual, [-1.0, 0.0], atol=1e-9)
    s.change_coeffs(np.array([0]), np.array([1]), np.array([2.0]))
    s.change_row_upper(np.array([1]), np.array([0.25]))
    for primal in (False, True):
        again = s.resolve(duals=True, primal=primal)
        fresh = LPSolver("core").solve(model(2.0, 0.25))
        assert again.objective == pytest.approx(fresh.objective) == pytest.approx(-5 / 8)
    assert s.solves == 3
    with pytest.raises(ValueError, match="backend"):
        LPSolver("linprog").load(model(1.0, 0.5))


def test_isolated_allocation_is_gavels() -> None:
    # 2 jobs on 3 + 1 devices: each gets cap/k = [1.5, 0.5] / sf, scaled to row sum <= 1
    x = isolated_allocation(np.array([1.0, 4.0]), np.array([3.0, 1.0]))
    np.testing.assert_allclose(x, [[0.75, 0.25], [1.5 / 4, 0.5 / 4]])
    thr = np.array([[2.0, 1.0], [4.0, 4.0]])
    assert isolated_throughput(thr, np.array([1.0, 4.0]), np.array([3.0, 1.0])).tolist() == (
        pytest.approx([1.75, 2.0])
    )


def test_proportional_throughput_ignores_the_job_count() -> None:
    # Gavel divides cap/k by its row sum: the share of each type is cap_t / Σ cap
    thr = np.array([[4.0, 1.0]])
    assert proportional_throughput(thr, np.array([3.0, 1.0])).tolist() == [3.25]


def test_fallback_keeps_the_base_constraints_and_avoids_unusable_types() -> None:
    thr = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    sf, cap = np.array([1.0, 2.0, 1.0]), np.array([2.0, 2.0])
    x = fallback_allocation(thr, sf, cap)
    assert check_allocation(x, thr, sf, cap) == []
    assert x[0, 1] == 0 and x[2, 0] == 0 and x[1].sum() > 0


def test_check_allocation_names_each_broken_constraint() -> None:
    thr, sf, cap = np.array([[1.0, 0.0]]), np.array([2.0]), np.array([1.0, 1.0])
    assert check_allocation(np.array([[0.9, 0.2]]), thr, sf, cap) == [
        "row sum above 1",
        "type capacity exceeded",
        "time on a type where the job cannot run",
    ]


def test_job_classes_group_identical_rows() -> None:
    thr = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 3.0], [1.0, 2.0]])
    sf = np.array([1.0, 1.0, 1.0, 2.0])
    first, inv, count = job_classes(thr, sf)
    assert len(first) == 3
    assert inv[0] == inv[1] != inv[2] != inv[3]
    assert count[inv[0]] == 2 and count.sum() == 4
    assert np.array_equal(thr[first][inv], thr)


# ---------------------------------------------------------------- brute force (hypothesis)


def vertex_max(c: np.ndarray, A: np.ndarray, b: np.ndarray, ub: np.ndarray) -> float:
    """Maximise c·x over {A x <= b, 0 <= x <= ub} by enumerating every vertex: each choice
    of n tight constraints among the rows and bounds, solved, kept if feasible (the brute
    force; exact for a bounded LP, whose optimum is attained at a vertex)."""
    n = len(c)
    rows = np.vstack([A, np.eye(n), -np.eye(n)])
    rhs = np.concatenate([b, ub, np.zeros(n)])
    best = -np.inf
    for tight in itertools.combinations(range(len(rows)), n):
        M = rows[list(tight)]
        if abs(np.linalg.det(M)) < 1e-9:
            continue
        x = np.linalg.solve(M, rhs[list(tight)])
        if np.all(rows @ x <= rhs + 1e-7):
            best = max(best, float(c @ x))
    return best


@settings(max_examples=40, deadline=None)
@given(
    thr=st.lists(st.integers(0, 4), min_size=4, max_size=4),
    sf=st.lists(st.sampled_from([1, 2]), min_size=2, max_size=2),
    cap=st.lists(st.integers(1, 2), min_size=2, max_size=2),
)
def test_max_throughput_lp_matches_vertex_enumeration(
    thr: list[int], sf: list[int], cap: list[int]
) -> None:
    T = np.array(thr, dtype=float).reshape(2, 2)
    lp = BaseLP(T, np.array(sf, dtype=float), np.array(cap, dtype=float))
    m = lp.model(-T.ravel())
    res = LPSolver().solve(m)
    assert res.ok
    brute = vertex_max(T.ravel(), m.matrix().toarray(), m.b, m.ub)
    assert -res.objective == pytest.approx(brute, abs=1e-7)
    assert res.x is not None
    x = lp.allocation(res.x)
    assert check_allocation(x, T, np.array(sf, float), np.array(cap, float)) == []


@settings(max_examples=25, deadline=None)
@given(
    thr=st.lists(st.integers(0, 5), min_size=6, max_size=6),
    cap=st.lists(st.integers(1, 3), min_size=2, max_size=2),
)
def test_core_and_linprog_agree_on_random_lps(thr: list[int], cap: list[int]) -> None:
    # a 3×2 instance is too big to enumerate quickly: cross-check the two backends (and
    # scipy's interior-point method) instead
    T = np.array(thr, dtype=float).reshape(3, 2)
    lp = BaseLP(T, np.ones(3), np.array(cap, dtype=float))
    m = lp.model(-T.ravel())
    a, b = LPSolver("core").solve(m), LPSolver("linprog").solve(m)
    ipm = linprog(
        m.c, A_ub=m.matrix(), b_ub=m.b, bounds=np.column_stack([m.lb, m.ub]), method="highs-ipm"
    )
    assert a.objective == pytest.approx(b.objective, abs=1e-7)
    assert a.objective == pytest.approx(ipm.fun, abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(
    k=st.integers(1, 6),
    nt=st.integers(1, 3),
    seed=st.integers(0, 10_000),
    counted=st.booleans(),
)
def test_maxmin_model_is_the_base_lp_model_bit_for_bit(
    k: int, nt: int, seed: int, counted: bool
) -> None:
    # the direct builder must hand HiGHS exactly the arrays BaseLP + add_job_rows + model
    # build (same order, same values, explicit zeros included), or results could move
    rng = np.random.default_rng(seed)
    thr = rng.uniform(0.0, 5.0, (k, nt)) * (rng.random((k, nt)) < 0.8)
    sf = rng.choice([1.0, 2.0, 4.0], k)
    cap = rng.integers(1, 9, nt).astype(float)
    coef = thr * rng.uniform(0.1, 2.0, (k, 1))
    live = rng.random(k) < 0.7
    count = rng.integers(1, 5, k).astype(float) if counted else None
    lp = BaseLP(thr, sf, cap, n_extra=1, count=count)
    lp.add_job_rows(-coef, 0.0, which=np.flatnonzero(live), extra=np.ones((k, 1)))
    c = np.zeros(lp.nv)
    c[-1] = -1.0
    want = lp.model(c)
    got = maxmin_model(thr, sf, cap, coef, live, count)
    for field in ("c", "indptr", "indices", "data", "b", "lb", "ub"):
        a, b = getattr(got, field), getattr(want, field)
        assert a.dtype == b.dtype and a.shape == b.shape, field
        assert a.tobytes() == b.tobytes(), field


def random_maxmin(seed: int, k: int, nt: int, counted: bool) -> tuple[np.ndarray, ...]:
    """A random max-min instance: zero throughputs, gangs, class counts, dead rows, and
    identical rows (ties: a degenerate LP)."""
    rng = np.random.default_rng(seed)
    thr = rng.uniform(0.0, 5.0, (k, nt)) * (rng.random((k, nt)) < 0.8)
    thr[rng.random(k) < 0.3] = rng.choice([1.0, 2.0], nt)
    sf = rng.choice([1.0, 2.0, 4.0], k)
    cap = rng.integers(1, 9, nt).astype(float)
    coef = thr * rng.uniform(0.1, 2.0, (k, 1))
    live = (rng.random(k) < 0.8) & (coef.sum(axis=1) > 0)
    count = rng.integers(1, 5, k).astype(float) if counted else np.ones(k)
    return thr, sf, cap, coef, live, count


@settings(max_examples=80, deadline=None)
@given(
    k=st.integers(1, 12),
    nt=st.integers(1, 3),
    seed=st.integers(0, 10_000),
    counted=st.booleans(),
)
def test_dense_maxmin_simplex_reaches_highs_optimum(
    k: int, nt: int, seed: int, counted: bool
) -> None:
    # The dense simplex kernel that seeds gavel-mmf's centre tie-break: a feasible point of
    # the same LP (maxmin_model's) with HiGHS's optimal level, to rounding.
    thr, sf, cap, coef, live, count = random_maxmin(seed, k, nt, counted)
    assume(live.any())  # (the policies call it only then; else z is unbounded)
    m = maxmin_model(thr, sf, cap, coef, live, count)
    ref = LPSolver().solve(m)
    assert ref.x is not None
    x = np.empty(k * nt + 1)
    assert maxmin_simplex(thr, coef, sf * count, cap, live, 2000, x) == WF_OK
    assert x[-1] == pytest.approx(ref.x[-1], rel=1e-9, abs=1e-12)
    assert np.all(x >= -1e-12) and np.all(m.matrix() @ x <= m.b + 1e-9)
    assert np.all(x[:-1][thr.ravel() <= 0] == 0.0)


def test_dense_maxmin_simplex_compiled_is_its_python_source_bit_for_bit() -> None:
    from clustersim import kernels

    was = kernels.compiled_in_use()
    out: dict[bool, list[np.ndarray]] = {}
    try:
        for compiled in (False, True):
            if compiled and not kernels.use_compiled():
                pytest.skip("numba not installed")  # (the product pins it)
            if not compiled:
                kernels.use_compiled(False)
            xs = []
            for seed in range(30):
                thr, sf, cap, coef, live, count = random_maxmin(seed, 1 + seed % 12, 3, True)
                if not live.any():
                    continue
                x = np.empty(thr.size + 1)
                assert maxmin_simplex(thr, coef, sf * count, cap, live, 2000, x) == WF_OK
                xs.append(x)
            out[compiled] = xs
    finally:
        kernels.use_compiled(was)
    for a, b in zip(out[False], out[True], strict=True):
        assert a.tobytes() == b.tobytes()


@settings(max_examples=80, deadline=None)
@given(
    k=st.integers(1, 12),
    nt=st.integers(1, 3),
    seed=st.integers(0, 10_000),
    counted=st.booleans(),
    maxmin=st.booleans(),
)
def test_solve_dense_reaches_highs_optimum(
    k: int, nt: int, seed: int, counted: bool, maxmin: bool
) -> None:
    # LPSolver.solve_dense (the generic dense kernel that seeds the centres of
    # gavel-max-throughput and gavel-mmf-packed): HiGHS's optimal value on the max-min LP and
    # on the throughput-sum LP (many ties), at a point that keeps every row and bound.
    thr, sf, cap, coef, live, count = random_maxmin(seed, k, nt, counted)
    if maxmin:
        assume(live.any())
        m = maxmin_model(thr, sf, cap, coef, live, count)
    else:
        lp = BaseLP(thr, sf, cap, count=count)
        m = lp.model(-(thr * count[:, None]).ravel())
    ref = LPSolver().solve(m)
    assert ref.x is not None
    s = LPSolver()
    got = s.solve_dense(m)
    assert got is not None and got.x is not None and s.dense_failures == 0
    assert got.objective == pytest.approx(ref.objective, rel=1e-9, abs=1e-12)
    assert np.all(got.x >= -1e-12) and np.all(got.x <= m.ub + 1e-9)  # (to rounding)
    assert np.all(m.matrix() @ got.x <= m.b + 1e-9)
    assert s.stats()["lp_solves"] == 1


def test_solve_dense_declines_what_it_cannot_take() -> None:
    # a negative right-hand side (the slack basis is infeasible) and a vertex above an upper
    # bound the kernel does not see: None, counted, so the caller asks HiGHS
    thr, sf, cap, _, _, count = random_maxmin(3, 4, 2, False)
    lp = BaseLP(thr, sf, cap, count=count)
    m = lp.model(-(thr * count[:, None]).ravel())
    s = LPSolver()
    bad_b = LPModel(m.c, m.indptr, m.indices, m.data, m.b - 10.0, m.lb, m.ub)
    assert s.solve_dense(bad_b) is None and s.dense_failures == 1
    low_ub = LPModel(m.c, m.indptr, m.indices, m.data, m.b, m.lb, np.minimum(m.ub, 0.01))
    assert s.solve_dense(low_ub) is None and s.dense_failures == 2
    assert s.solve(low_ub).x is not None  # HiGHS sees the bound


def test_lp_dense_compiled_is_its_python_source_bit_for_bit() -> None:
    from clustersim import kernels

    was = kernels.compiled_in_use()
    out: dict[bool, list[bytes]] = {}
    try:
        for compiled in (False, True):
            if compiled and not kernels.use_compiled():
                pytest.skip("numba not installed")  # (the product pins it)
            if not compiled:
                kernels.use_compiled(False)
            xs = []
            for seed in range(30):
                thr, sf, cap, _, _, count = random_maxmin(seed, 1 + seed % 12, 3, True)
                m = BaseLP(thr, sf, cap, count=count).model(-(thr * count[:, None]).ravel())
                res = LPSolver().solve_dense(m)
                assert res is not None and res.x is not None
                xs.append(res.x.tobytes())
            out[compiled] = xs
    finally:
        kernels.use_compiled(was)
    assert out[False] == out[True]


def test_dense_maxmin_simplex_reports_its_pivot_limit() -> None:
    # (the caller then solves with HiGHS: tests/test_gavel_lp.py)
    thr, sf, cap, coef, live, _ = random_maxmin(3, 6, 3, False)
    x = np.empty(thr.size + 1)
    assert maxmin_simplex(thr, coef, sf, cap, live, 0, x) == WF_PIVOT_LIMIT


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 30),
    seed=st.integers(0, 10_000),
)
def test_classes_among_a_subset_are_job_classes_of_the_subset(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    thr = rng.choice([0.0, 1.0, 2.5], (n, 2))
    sf = rng.choice([1.0, 2.0], n)
    gid = job_classes(thr, sf)[1]
    jobs = np.flatnonzero(rng.random(n) < 0.6)
    if not len(jobs):
        jobs = np.array([0])
    want = job_classes(thr[jobs], sf[jobs])
    got = classes_among(gid, jobs)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.tolist() == b.tolist()

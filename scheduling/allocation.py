"""Allocation-optimisation layer for round-based policies: LPs over time shares, solved by HiGHS.

An allocation ``X`` is a ``(k, n_types)`` matrix: ``X[j, t]`` is the share of time job ``j``
should run (as a whole gang) on accelerator type ``t``. Every allocation this module builds
or returns satisfies the *base constraints* of Gavel (Narayanan et al., OSDI'20, §3.1;
``policies/policy.py::get_base_constraints`` in its code):

* ``X >= 0``;
* each row sums to at most 1 (a job runs at most all of the time);
* per-type capacity, counted in devices with the gang whole:
  ``Σ_j X[j, t] · sf_j <= devices_t`` where ``sf_j`` is the job's gang size (Gavel's
  ``scale_factor``);
* ``X[j, t] = 0`` where the job's throughput on ``t`` is 0 (it cannot run there). Gavel leaves
  these free in its LP (they add nothing to any objective it uses, but an interior-point
  solution spreads a little time there); we fix them at 0 so such a type is never used.

Solver. scipy's ``linprog(method="highs")`` (HiGHS dual simplex / IPM with crossover, chosen
by HiGHS), pinned through ``scipy==1.17.1``: it ships in the wheel (no extra dependency), takes
the sparse matrices built here without conversion, and returns a vertex (basic) solution.
Gavel uses cvxpy with ECOS (an interior-point conic solver, default tolerances ``abstol =
reltol = 1e-8``, ``feastol = 1e-8``) and clips the result to ``[0, 1]``; HiGHS uses primal and
dual feasibility tolerances of ``1e-7``. Both therefore agree on the optimal *value* to about
``1e-7`` relative, but where the optimum is not unique (a degenerate LP) ECOS returns a point
inside the optimal face and HiGHS a vertex of it: see each policy's docstring for where that
matters and what post-processing makes our answer independent of HiGHS's tie-breaking.

Bad input. A solve that does not end ``optimal`` (infeasible, unbounded, iteration limit,
numerical trouble) never raises: :class:`LPSolver` counts it as a *fallback* and the caller
uses :func:`fallback_allocation` — Gavel's "isolated" allocation (each job gets ``1/k`` of every
type's devices, divided by its gang size and scaled down so that the row sums to at most 1;
Gavel's own fallback in ``finish_time_fairness.py``), restricted to the types where the job
can run. It satisfies every base constraint. The counters (solves, seconds in the solver,
fallbacks) reach the run's summary as ``lp_solves``, ``lp_solver_s`` and ``lp_fallbacks``
(:meth:`scheduling.base.Policy.stats`).

Everything is vectorised: the constraint matrix is assembled in compressed-column form with
numpy (:func:`csc_arrays`), O(k · n_types) work and no per-variable Python loop; jobs with
identical inputs are solved as one row (:func:`job_classes`) where the LP is symmetric in them.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from scipy.optimize import linprog

from clustersim.kernels import WF_OK, face_centre, lp_dense

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: HiGHS statuses as scipy reports them (``OptimizeResult.status``).
STATUS_OPTIMAL = 0
#: Our own status for a solve that raised inside scipy/HiGHS (numerical failure).
STATUS_ERROR = 99
#: The core backend turns HiGHS's presolve off for LPs with at most this many variables: on
#: the small LPs of a recomputation (tens of job classes) it halves the time of a solve
#: (0.45 → 0.24 ms on 15 classes × 3 types) and finds the same optimum.
PRESOLVE_ABOVE = 5000
#: :meth:`LPSolver.solve_dense` takes models whose dense tableau has at most this many
#: entries (``(rows + 1) · (rows + columns + 1)``: a few dozen rows and hundreds of columns)
#: and allows the kernel this many pivots.
DENSE_MAX_ENTRIES = 200_000
DENSE_MAX_PIVOTS = 5000


@dataclass
class LPResult:
    """One LP solve.

    Attributes
    ----------
    x
        The full solution vector (allocation entries first, row-major ``(k, n_types)``, then
        any extra variables), or ``None`` when the solve did not end optimal.
    status
        scipy's status numbers (0 optimal, 1 iteration/time limit, 2 infeasible, 3 unbounded,
        4 other trouble) or :data:`STATUS_ERROR` (the solver raised).
    message
        The solver's message.
    objective
        Optimal value of the minimised objective (``nan`` when not optimal).
    solve_s
        Wall seconds spent in the solver.
    row_dual
        The rows' dual values (HiGHS's sign: ``<= 0`` on a tight ``<=`` row of a minimisation)
        when asked for (:meth:`LPSolver.resolve`) and optimal, else ``None``.
    """

    x: FloatArray | None
    status: int
    message: str
    objective: float
    solve_s: float
    row_dual: FloatArray | None = None

    @property
    def ok(self) -> bool:
        return self.x is not None


@dataclass
class LPModel:
    """``minimise c·v  s.t.  A v <= b,  lb <= v <= ub`` with ``A`` in compressed-column form."""

    c: FloatArray
    indptr: IntArray
    indices: IntArray
    data: FloatArray
    b: FloatArray
    lb: FloatArray
    ub: FloatArray

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.b), len(self.c)

    def matrix(self) -> sp.csc_matrix:
        return sp.csc_matrix((self.data, self.indices, self.indptr), shape=self.shape)


def csc_arrays(
    rows: IntArray, cols: IntArray, vals: FloatArray, n_cols: int
) -> tuple[IntArray, IntArray, FloatArray]:
    """Compressed-column arrays of a matrix given as coordinates (numpy only: building a
    ``scipy.sparse`` matrix costs more than solving the small LPs of a recomputation)."""
    order = np.lexsort((rows, cols))
    cols_s = cols[order]
    indptr = np.zeros(n_cols + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols_s, minlength=n_cols), out=indptr[1:])
    return indptr, rows[order].astype(np.int64), vals[order].astype(np.float64)


class BaseLP:
    """The base constraints of one allocation problem over ``k · n_types`` allocation entries
    (row-major) and ``n_extra`` more variables appended after them.

    Parameters
    ----------
    thr
        ``(k, n_types)`` throughput of each job's full gang on each type (0: cannot run).
    sf
        ``(k,)`` gang sizes (devices).
    cap
        ``(n_types,)`` devices of each type.
    n_extra
        Number of extra variables (``>= 0``), e.g. the max-min level.
    count
        ``(k,)`` number of identical jobs each row stands for (:func:`job_classes`): a row's
        capacity use is multiplied by it, its row sum stays per job. Default 1.
    """

    def __init__(
        self,
        thr: FloatArray,
        sf: FloatArray,
        cap: FloatArray,
        n_extra: int = 0,
        count: FloatArray | None = None,
    ) -> None:
        self.thr = np.asarray(thr, dtype=np.float64)
        self.k, self.nt = self.thr.shape
        self.sf = np.asarray(sf, dtype=np.float64)
        self.count = np.ones(self.k) if count is None else np.asarray(count, dtype=np.float64)
        self.cap = np.asarray(cap, dtype=np.float64)
        self.n_extra = n_extra
        self.nx = self.k * self.nt
        self.nv = self.nx + n_extra
        k, nt = self.k, self.nt
        cols = np.arange(self.nx, dtype=np.int64)
        job = np.repeat(np.arange(k, dtype=np.int64), nt)
        typ = np.tile(np.arange(nt, dtype=np.int64), k)
        # capacity rows 0..nt-1: Σ_j count_j sf_j X[j, t] <= cap_t ; row sums nt..nt+k-1
        self._rows = [typ, nt + job]
        self._cols = [cols, cols]
        self._vals = [np.repeat(self.sf * self.count, nt), np.ones(self.nx)]
        self._b = [self.cap, np.ones(k)]
        self.n_rows = nt + k
        ub = np.where(self.thr.ravel() > 0, 1.0, 0.0)  # zero-throughput entries fixed at 0
        self.lb: FloatArray = np.zeros(self.nv)
        self.ub: FloatArray = np.concatenate([ub, np.full(n_extra, np.inf)])

    def add_job_rows(
        self,
        coef: FloatArray,
        b: FloatArray | float,
        which: IntArray | None = None,
        extra: FloatArray | None = None,
        extra_each: FloatArray | None = None,
    ) -> None:
        """Add one row ``Σ_t coef[j, t] X[j, t] + extra[j] · extras <= b[j]`` per job of
        ``which`` (default all); ``extra`` is ``(k, n_extra)``. ``extra_each`` instead gives
        the ``i``-th added row the coefficient ``extra_each[i]`` on extra variable ``i`` only
        (one extra variable per row, without a dense ``k × n_extra`` matrix)."""
        k, nt = self.k, self.nt
        which = np.arange(k, dtype=np.int64) if which is None else np.asarray(which, np.int64)
        m = len(which)
        local = np.repeat(np.arange(m, dtype=np.int64), nt)
        self._rows.append(self.n_rows + local)
        self._cols.append((which[:, None] * nt + np.arange(nt)[None, :]).ravel())
        self._vals.append(np.asarray(coef, dtype=np.float64)[which].ravel())
        if extra is not None and self.n_extra:
            e = np.asarray(extra, dtype=np.float64)[which]
            r, c = np.nonzero(e)
            self._rows.append(self.n_rows + r.astype(np.int64))
            self._cols.append(self.nx + c.astype(np.int64))
            self._vals.append(e[r, c])
        if extra_each is not None:
            self._rows.append(self.n_rows + np.arange(m, dtype=np.int64))
            self._cols.append(self.nx + np.arange(m, dtype=np.int64))
            self._vals.append(np.asarray(extra_each, dtype=np.float64))
        self._b.append(np.asarray(b, dtype=np.float64)[which] if np.ndim(b) else np.full(m, b))
        self.n_rows += m

    def model(
        self, c: FloatArray, lb: FloatArray | None = None, ub: FloatArray | None = None
    ) -> LPModel:
        """The LP with objective ``c`` (minimised) over the rows added so far."""
        indptr, indices, data = csc_arrays(
            np.concatenate(self._rows),
            np.concatenate(self._cols),
            np.concatenate(self._vals),
            self.nv,
        )
        return LPModel(
            c=np.asarray(c, dtype=np.float64),
            indptr=indptr,
            indices=indices,
            data=data,
            b=np.concatenate(self._b),
            lb=self.lb if lb is None else lb,
            ub=self.ub if ub is None else ub,
        )

    def allocation(self, x: FloatArray) -> FloatArray:
        """The ``(k, n_types)`` allocation of a solution vector, clipped to ``[0, 1]`` and 0
        where the job cannot run (as Gavel clips ECOS's answer)."""
        return solution_allocation(x, self.thr)


def solution_allocation(x: FloatArray, thr: FloatArray) -> FloatArray:
    """:meth:`BaseLP.allocation` for an LP over the throughputs ``thr`` ``(k, n_types)``."""
    k, nt = thr.shape
    a = np.clip(x[: k * nt].reshape(k, nt), 0.0, 1.0)
    a[thr <= 0] = 0.0
    return a


@functools.lru_cache(maxsize=256)
def _maxmin_structure(k: int, nt: int) -> tuple[IntArray, IntArray]:
    """``indptr`` and ``indices`` of :func:`maxmin_model` with every row live (read only)."""
    nx = k * nt
    indptr = np.empty(nx + 2, dtype=np.int64)
    indptr[: nx + 1] = np.arange(0, 3 * nx + 1, 3, dtype=np.int64)
    indptr[nx + 1] = 3 * nx + k
    rows = np.empty((k, nt, 3), dtype=np.int64)
    rows[:, :, 0] = np.arange(nt, dtype=np.int64)[None, :]
    rows[:, :, 1] = nt + np.arange(k, dtype=np.int64)[:, None]
    rows[:, :, 2] = nt + k + np.arange(k, dtype=np.int64)[:, None]
    indices = np.concatenate([rows.ravel(), nt + k + np.arange(k, dtype=np.int64)])
    indptr.flags.writeable = False
    indices.flags.writeable = False
    return indptr, indices


def maxmin_model(
    thr: FloatArray,
    sf: FloatArray,
    cap: FloatArray,
    coef: FloatArray,
    live: npt.NDArray[np.bool_],
    count: FloatArray | None = None,
) -> LPModel:
    """The max-min LP: maximise ``z`` subject to the base constraints and
    ``z <= Σ_t coef[j, t] X[j, t]`` for each ``live`` row ``j`` (one extra variable, ``z``).

    The same model, array for array and bit for bit, as ``BaseLP(thr, sf, cap, n_extra=1,
    count=count)`` followed by ``add_job_rows(-coef, 0.0, which=flatnonzero(live),
    extra=ones((k, 1)))`` and ``model(c)`` with ``c = -e_z`` (the tests check it), built
    straight in compressed-column form: every column's entries are known in row order (the
    type's capacity row, the job's row sum, the job's max-min row), so no coordinate sort is
    needed. A recomputation of a max-min policy costs a few tens of microseconds of numpy
    here instead of a few hundred through :class:`BaseLP`.
    """
    thr = np.asarray(thr, dtype=np.float64)
    k, nt = thr.shape
    nx = k * nt
    live = np.asarray(live, dtype=bool)
    m = int(np.count_nonzero(live))
    sf = np.asarray(sf, dtype=np.float64)
    use = sf if count is None else sf * np.asarray(count, dtype=np.float64)
    c = np.zeros(nx + 1)
    c[-1] = -1.0
    b = np.zeros(nt + k + m)
    b[:nt] = cap
    b[nt : nt + k] = 1.0
    ub = np.empty(nx + 1)
    ub[:nx] = np.where(thr.ravel() > 0, 1.0, 0.0)
    ub[nx] = np.inf
    if m == k:  # the usual case: every row has its max-min row, the structure is k's
        indptr, indices = _maxmin_structure(k, nt)
        data = np.empty(3 * nx + k)
        v = data[: 3 * nx].reshape(k, nt, 3)
        v[:, :, 0] = use[:, None]
        v[:, :, 1] = 1.0
        v[:, :, 2] = -np.asarray(coef, dtype=np.float64)
        data[3 * nx :] = 1.0
        return LPModel(
            c=c, indptr=indptr, indices=indices, data=data, b=b, lb=np.zeros(nx + 1), ub=ub
        )
    # per allocation column (j, t): rows t, nt + j and (live j) nt + k + position of j
    per_col = np.empty(nx + 1, dtype=np.int64)
    per_col[:nx] = np.repeat(2 + live.astype(np.int64), nt)
    per_col[nx] = m
    indptr = np.zeros(nx + 2, dtype=np.int64)
    np.cumsum(per_col, out=indptr[1:])
    nnz = int(indptr[-1])
    rows = np.empty((k, nt, 3), dtype=np.int64)
    rows[:, :, 0] = np.arange(nt, dtype=np.int64)[None, :]
    rows[:, :, 1] = nt + np.arange(k, dtype=np.int64)[:, None]
    rows[:, :, 2] = (nt + k - 1 + np.cumsum(live))[:, None]
    vals = np.empty((k, nt, 3))
    vals[:, :, 0] = use[:, None]
    vals[:, :, 1] = 1.0
    vals[:, :, 2] = -np.asarray(coef, dtype=np.float64)
    keep = np.ones((k, nt, 3), dtype=bool)
    keep[:, :, 2] = live[:, None]
    indices = np.empty(nnz, dtype=np.int64)
    data = np.empty(nnz)
    indices[: nnz - m] = rows[keep]
    indices[nnz - m :] = nt + k + np.arange(m, dtype=np.int64)
    data[: nnz - m] = vals[keep]
    data[nnz - m :] = 1.0
    return LPModel(c=c, indptr=indptr, indices=indices, data=data, b=b, lb=np.zeros(nx + 1), ub=ub)


try:  # scipy's own HiGHS binding, the object linprog(method="highs") drives
    from scipy.optimize._highspy import _core as _highs_core
except ImportError:  # pragma: no cover - another scipy layout: linprog only
    _highs_core = None
_OPTIMAL = None if _highs_core is None else _highs_core.HighsModelStatus.kOptimal
_COLWISE = 0 if _highs_core is None else int(_highs_core.MatrixFormat.kColwise)
_MINIMIZE = 0 if _highs_core is None else int(_highs_core.ObjSense.kMinimize)
# HiGHS's simplex_strategy values: its choice (the default), the primal simplex
_CHOOSE = 0
_PRIMAL = 4


def _status(model_status: object) -> int:
    """scipy's status number for a HiGHS model status."""
    name = str(model_status).rsplit(".", 1)[-1]
    if name == "kOptimal":
        return STATUS_OPTIMAL
    if name in ("kIterationLimit", "kTimeLimit"):
        return 1
    if name == "kInfeasible":
        return 2
    if name in ("kUnbounded", "kUnboundedOrInfeasible"):
        return 3
    return 4


class LPSolver:
    """HiGHS through scipy, with the counters a run reports.

    ``backend="core"`` (default when available) hands the model straight to the HiGHS object
    that scipy bundles (``scipy.optimize._highspy._core``, the one ``linprog(method="highs")``
    drives, with its default options except presolve, off for small LPs: see
    :data:`PRESOLVE_ABOVE`),
    skipping ``linprog``'s per-call validation — about 5× less overhead on the small LPs a
    recomputation solves (0.3 ms instead of 1.4 ms on 12 jobs × 3 types).
    ``backend="linprog"`` goes through the public ``scipy.optimize.linprog(method="highs")``;
    the tests check both give the same optimum. The binding is private to scipy, which is one
    reason scipy is pinned; without it we use ``linprog``.
    """

    def __init__(self, backend: str | None = None) -> None:
        self.solves = 0
        self.solver_s = 0.0
        self.fallbacks = 0
        self.dense_failures = 0  # solve_dense calls that failed (HiGHS then solves)
        if backend is None:
            backend = "core" if _highs_core is not None else "linprog"
        if backend not in ("core", "linprog") or (backend == "core" and _highs_core is None):
            raise ValueError(f"backend: unknown or unavailable LP backend {backend!r}")
        self.backend = backend
        self._highs: Any = None
        self._loaded: tuple[int, int] | None = None  # shape of the model HiGHS holds
        self._b: FloatArray | None = None  # and its right-hand sides
        self._presolve = "choose"
        self._strategy = _CHOOSE  # HiGHS's simplex_strategy now
        self._cols: dict[int, npt.NDArray[np.int32]] = {}  # column index lists by length
        self._ints: dict[int, npt.NDArray[np.int32]] = {}  # integrality (all 0) by length

    def _core(
        self, m: LPModel, warm: bool, primal: bool = False
    ) -> tuple[int, str, FloatArray | None]:
        assert _highs_core is not None
        if self._highs is None:
            self._highs = _highs_core._Highs()
            self._highs.setOptionValue("output_flag", False)
        h = self._highs
        strategy = _PRIMAL if primal else _CHOOSE
        if strategy != self._strategy:
            h.setOptionValue("simplex_strategy", strategy)
            self._strategy = strategy
        presolve = "on" if m.shape[1] > PRESOLVE_ABOVE else "off"
        if presolve != self._presolve:
            h.setOptionValue("presolve", presolve)
            self._presolve = presolve
        if warm and self._loaded == m.shape:
            n_col = m.shape[1]
            cols = self._cols.get(n_col)
            if cols is None:
                cols = self._cols[n_col] = np.arange(n_col, dtype=np.int32)
            h.changeColsCost(n_col, cols, m.c)
            h.changeColsBounds(n_col, cols, m.lb, m.ub)
            assert self._b is not None
            for r in np.flatnonzero(m.b != self._b).tolist():  # no vector form in scipy's binding
                h.changeRowBounds(r, -np.inf, float(m.b[r]))
            self._b = m.b.copy()
            return self._run(h)
        self._core_pass(m)
        return self._run(h)

    def _core_pass(self, m: LPModel) -> None:
        """Replace the model HiGHS holds by ``m`` (no solve; the next one starts cold)."""
        if self._highs is None:
            assert _highs_core is not None
            self._highs = _highs_core._Highs()
            self._highs.setOptionValue("output_flag", False)
        h = self._highs
        presolve = "on" if m.shape[1] > PRESOLVE_ABOVE else "off"
        if presolve != self._presolve:
            h.setOptionValue("presolve", presolve)
            self._presolve = presolve
        # the model as arrays (the binding's pointer form of passModel: the same HighsLp
        # inside HiGHS, without building one attribute by attribute in Python, which copied
        # every array twice); every column continuous
        n_row, n_col = m.shape
        zeros = self._ints.get(n_col)
        if zeros is None:
            zeros = self._ints[n_col] = np.zeros(n_col, dtype=np.int32)
        h.clearModel()
        h.passModel(
            n_col,
            n_row,
            len(m.data),
            _COLWISE,
            _MINIMIZE,
            0.0,
            m.c,
            m.lb,
            m.ub,
            np.full(n_row, -np.inf),
            m.b,
            m.indptr.astype(np.int32),
            m.indices.astype(np.int32),
            m.data,
            zeros,
        )
        self._loaded = m.shape
        self._b = m.b.copy()

    @staticmethod
    def _run(h: Any) -> tuple[int, str, FloatArray | None]:
        h.run()
        model_status = h.getModelStatus()
        if model_status != _OPTIMAL:  # (naming the status costs more than the comparison)
            status = _status(model_status)
            if status != STATUS_OPTIMAL:
                return status, str(model_status), None
        return STATUS_OPTIMAL, "optimal", np.array(h.getSolution().col_value, dtype=np.float64)

    def _linprog(self, m: LPModel) -> tuple[int, str, FloatArray | None]:
        res = linprog(
            m.c,
            A_ub=m.matrix(),
            b_ub=m.b,
            bounds=np.column_stack([m.lb, m.ub]),
            method="highs",
        )
        status = int(res.status)
        x = np.asarray(res.x, dtype=np.float64) if status == STATUS_OPTIMAL else None
        return status, str(res.message), x

    def solve(self, m: LPModel, warm: bool = False, primal: bool = False) -> LPResult:
        """Minimise the model; never raises on solver trouble (see the module docstring).

        ``warm``: the model has the same constraint matrix as the previous one solved (only
        the objective, the variable bounds or the right-hand sides differ), so the core
        backend changes those in place and HiGHS starts from the previous basis. The optimum
        is the same either way; where it is not unique the vertex may differ.

        ``primal``: solve with HiGHS's primal simplex (core backend) instead of its choice
        (the dual simplex on these LPs). After a warm start that changed only the objective
        the previous basis is still primal feasible, so the primal simplex goes on from it:
        on the second phase of the max-min policies with a thousand rows (full Philly) it is
        2.4× faster than the dual simplex, which has to restore dual feasibility first. The
        optimum is the same; where it is not unique the vertex may differ.
        """
        t0 = time.perf_counter()
        try:
            if self.backend == "core":
                status, message, x = self._core(m, warm, primal)
            else:
                status, message, x = self._linprog(m)
        except (ValueError, ArithmeticError, RuntimeError) as exc:  # failure inside HiGHS
            status, message, x = STATUS_ERROR, str(exc), None
            self._loaded = None
        if x is not None and not np.isfinite(x).all():
            status, message, x = STATUS_ERROR, "non-finite solution", None
        dt = time.perf_counter() - t0
        self.solves += 1
        self.solver_s += dt
        obj = float(m.c @ x) if x is not None else float("nan")
        return LPResult(x=x, status=status, message=message, objective=obj, solve_s=dt)

    def load(self, m: LPModel) -> None:
        """Hand the model ``m`` to HiGHS without solving it (core backend only), to be changed
        in place (:meth:`change_coeffs`, :meth:`change_row_upper`) and solved by
        :meth:`resolve`, each solve starting from the previous one's basis."""
        if self.backend != "core":
            raise ValueError("backend: incremental solves need the core backend")
        self._core_pass(m)
        self._loaded = None  # changed in place from now on: solve(warm=True) starts over

    def change_coeffs(self, rows: IntArray, cols: IntArray, vals: FloatArray) -> None:
        """Set the constraint matrix entries ``A[rows[i], cols[i]] = vals[i]`` of the loaded
        model (0 removes an entry)."""
        h = self._highs
        for r, c, v in zip(rows.tolist(), cols.tolist(), vals.tolist(), strict=True):
            h.changeCoeff(r, c, v)

    def change_row_upper(self, rows: IntArray, vals: FloatArray) -> None:
        """Set the right-hand sides ``b[rows[i]] = vals[i]`` of the loaded model."""
        h = self._highs
        for r, v in zip(rows.tolist(), vals.tolist(), strict=True):
            h.changeRowBounds(r, -np.inf, v)

    def resolve(self, duals: bool = False, primal: bool = False) -> LPResult:
        """Solve the loaded model as changed since the last solve, from that solve's basis
        (HiGHS keeps it across in-place changes); if that does not end optimal, once more
        from scratch. ``duals``: also return the rows' dual values. Never raises on solver
        trouble (a failure is a result without ``x``)."""
        h = self._highs
        t0 = time.perf_counter()
        row_dual = None
        strategy = _PRIMAL if primal else _CHOOSE
        if strategy != self._strategy:
            h.setOptionValue("simplex_strategy", strategy)
            self._strategy = strategy
        try:
            h.run()
            if h.getModelStatus() != _OPTIMAL:  # a warm start HiGHS could not finish (rare)
                h.clearSolver()
                h.run()
            model_status = h.getModelStatus()
            status = STATUS_OPTIMAL if model_status == _OPTIMAL else _status(model_status)
            x = None
            message = "optimal" if status == STATUS_OPTIMAL else str(model_status)
            if status == STATUS_OPTIMAL:
                sol = h.getSolution()
                x = np.array(sol.col_value, dtype=np.float64)
                if duals:
                    row_dual = np.array(sol.row_dual, dtype=np.float64)
        except (ValueError, ArithmeticError, RuntimeError) as exc:  # failure inside HiGHS
            status, message, x = STATUS_ERROR, str(exc), None
        if x is not None and not np.isfinite(x).all():
            status, message, x, row_dual = STATUS_ERROR, "non-finite solution", None, None
        dt = time.perf_counter() - t0
        self.solves += 1
        self.solver_s += dt
        obj = float(h.getObjectiveValue()) if x is not None else float("nan")
        return LPResult(x, status, message, obj, dt, row_dual)

    def solve_dense(self, m: LPModel) -> LPResult | None:
        """An optimal vertex of ``m`` from the dense simplex kernel
        (:func:`clustersim.kernels.lp_dense`), for callers to whom every optimal vertex is
        as good (the centre tie-breaks start from one). ``None`` when the model is larger
        than :data:`DENSE_MAX_ENTRIES` tableau entries, has a negative right-hand side or a
        finite lower bound other than 0, or when the kernel fails or its vertex breaks an
        upper bound by more than ``1e-9`` (the kernel sees only the bounds at 0): then the
        caller solves with HiGHS (:meth:`solve`). A call that reaches the kernel counts as a
        solve; ``dense_failures`` counts those that fail."""
        n_row, n_col = m.shape
        if (n_row + 1) * (n_row + n_col + 1) > DENSE_MAX_ENTRIES or np.any(m.lb != 0.0):
            return None
        x = np.empty(n_col)
        t0 = time.perf_counter()
        status = lp_dense(
            n_row,
            np.asarray(m.indptr, dtype=np.int64),
            np.asarray(m.indices, dtype=np.int64),
            np.asarray(m.data, dtype=np.float64),
            np.asarray(m.c, dtype=np.float64),
            np.asarray(m.b, dtype=np.float64),
            m.ub <= 0.0,
            DENSE_MAX_PIVOTS,
            x,
        )
        dt = time.perf_counter() - t0
        self.solves += 1
        self.solver_s += dt
        if status != WF_OK or np.any(x > m.ub + 1e-9) or not np.isfinite(x).all():
            self.dense_failures += 1
            return None
        return LPResult(x, STATUS_OPTIMAL, "optimal", float(m.c @ x), dt)

    def stats(self) -> dict[str, float]:
        return {
            "lp_solves": float(self.solves),
            "lp_solver_s": self.solver_s,
            "lp_fallbacks": float(self.fallbacks),
        }


def job_classes(*columns: FloatArray) -> tuple[IntArray, IntArray, FloatArray]:
    """Group jobs whose inputs are identical (same throughput row, gang, weight, ...).

    For an LP whose objective and constraints are symmetric in such jobs (max-min fairness,
    throughput and cost sums), averaging an optimal solution over permutations of identical
    jobs gives another optimal solution (convexity), so there is an optimum where identical
    jobs get identical rows: solving over the classes (one row each, capacity use weighted by
    the class size) finds it with a smaller LP, and the result no longer depends on how the
    solver breaks ties between identical jobs (ECOS's interior point treats them alike too).

    Returns ``(first, inverse, count)``: a representative row of each class, each job's
    class, and the class sizes.
    """
    key = np.column_stack([np.asarray(c, dtype=np.float64).reshape(len(c), -1) for c in columns])
    _, first, inverse, count = np.unique(
        key, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    return first.astype(np.int64), inverse.reshape(-1).astype(np.int64), count.astype(np.float64)


def classes_among(gid: IntArray, jobs: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
    """:func:`job_classes` of the jobs ``jobs``, from ``gid``, the class of every job of a
    larger set (``job_classes(...)[1]`` over all of them): the same ``(first, inverse,
    count)``, in the same order, at the cost of a sort of integers.

    ``job_classes`` orders classes by their rows, lexicographically; class numbers over the
    larger set are in that order, so the classes present among ``jobs`` keep it, and as both
    take the first occurrence as representative (a stable sort), ``first`` is the same.
    """
    g = gid[jobs]
    k = len(g)
    size = int(g.max()) + 1 if k else 0
    n = np.bincount(g, minlength=size)
    present = n > 0
    first = np.full(size, k, dtype=np.int64)
    np.minimum.at(first, g, np.arange(k, dtype=np.int64))  # first occurrence of each class
    rank = np.cumsum(present) - 1
    return first[present], rank[g].astype(np.int64), n[present].astype(np.float64)


def isolated_allocation(sf: FloatArray, cap: FloatArray) -> FloatArray:
    """Gavel's "isolated" allocation (``policies/isolated.py``): every job gets ``1/k`` of
    each type's devices, divided by its gang size, the row scaled down to sum to at most 1."""
    sf = np.asarray(sf, dtype=np.float64)
    k = len(sf)
    x = (np.asarray(cap, dtype=np.float64)[None, :] / max(k, 1)) / sf[:, None]
    return x / np.maximum(x.sum(axis=1), 1.0)[:, None]


def proportional_throughput(thr: FloatArray, cap: FloatArray) -> FloatArray:
    """Gavel's ``ProportionalPolicy.get_throughputs``: each job's throughput when its time is
    split over types in proportion to their device counts, ``Σ_t thr[j, t] · cap_t / Σ cap``
    (Gavel normalises the row of ``cap / k`` by its sum, whatever ``k``)."""
    cap = np.asarray(cap, dtype=np.float64)
    total = float(cap.sum())
    if total <= 0:
        return np.zeros(len(thr))
    return np.asarray(thr, dtype=np.float64) @ (cap / total)


def isolated_throughput(thr: FloatArray, sf: FloatArray, cap: FloatArray) -> FloatArray:
    """Gavel's ``IsolatedPolicy.get_throughputs``: throughput under :func:`isolated_allocation`."""
    return np.einsum("jt,jt->j", np.asarray(thr, dtype=np.float64), isolated_allocation(sf, cap))


def fallback_allocation(thr: FloatArray, sf: FloatArray, cap: FloatArray) -> FloatArray:
    """The documented fallback: :func:`isolated_allocation` with the types where a job cannot
    run set to 0 (which only lowers usage, so every base constraint still holds)."""
    x = isolated_allocation(sf, cap)
    x[np.asarray(thr) <= 0] = 0.0
    return x


def check_allocation(
    x: FloatArray, thr: FloatArray, sf: FloatArray, cap: FloatArray, tol: float = 1e-6
) -> list[str]:
    """The base constraints an allocation breaks (empty when it is valid); used by the tests
    and by callers that want to assert."""
    problems = []
    if np.any(x < -tol):
        problems.append("negative share")
    if np.any(x.sum(axis=1) > 1 + tol):
        problems.append("row sum above 1")
    if np.any(
        (np.asarray(sf)[:, None] * x).sum(axis=0)
        > np.asarray(cap) + tol * max(1.0, float(np.max(cap, initial=1.0)))
    ):
        problems.append("type capacity exceeded")
    if np.any(x[np.asarray(thr) <= 0] > tol):
        problems.append("time on a type where the job cannot run")
    return problems


def optimal_face_centre(
    m: LPModel,
    x_opt: FloatArray,
    x_int: FloatArray,
    weight_rows: FloatArray | None = None,
    weight_vars: FloatArray | None = None,
    rel_tol: float = 1e-6,
    max_iter: int = 60,
) -> FloatArray | None:
    """Approximate analytic centre of the optimal face of ``m`` (a tie-break inside it).

    Source: the analytic centre (Sonnevend 1986; Boyd & Vandenberghe, *Convex Optimization*,
    §8.5.3) of ``{v : A v <= b, v >= lb, c·v <= c·x_opt + tol}`` with ``tol = rel_tol ·
    max(1, |c·x_opt|)``: the point maximising the weighted sum of the logs of the slacks. An
    interior-point solver (ECOS, Gavel's) stops near the centre of the optimal face of a
    degenerate LP; a simplex/HiGHS answer ``x_opt`` is a vertex of it. Simplification: only
    the finite lower bounds get a barrier term (upper bounds are not used by the LPs here:
    ``ub`` is 1 or implied by the row sums; variables with ``ub == lb`` stay fixed), and the
    face is the ``tol``-relaxed one (an approximation of the exact face to ``rel_tol``).

    ``x_int`` must be strictly inside ``A v < b, v > lb`` (on the free variables);
    the start is ``x_opt + θ (x_int - x_opt)`` with θ keeping the objective row strict.
    ``weight_rows``/``weight_vars`` weight the log terms (a class row standing for ``count``
    identical jobs weighs ``count``, so the centre is that of the per-job problem). Damped
    Newton steps (a ratio test, then backtracking), to a half Newton decrement of
    :data:`clustersim.kernels.FACE_CENTRE_DEC` (converged to rounding, so the answer does
    not depend on the path to it), in the compiled kernel :func:`clustersim.kernels.face_centre`
    (the LPs are a few dozen variables, where numpy's per-call costs dominated). Returns
    ``None`` if the iteration fails (the caller keeps ``x_opt``).
    """
    n = len(m.c)
    out = np.empty(n)
    ok = face_centre(
        m.shape[0],
        np.asarray(m.indptr, dtype=np.int64),
        np.asarray(m.indices, dtype=np.int64),
        np.asarray(m.data, dtype=np.float64),
        np.asarray(m.c, dtype=np.float64),
        np.asarray(m.b, dtype=np.float64),
        np.asarray(m.lb, dtype=np.float64),
        np.asarray(m.ub, dtype=np.float64),
        np.asarray(x_opt, dtype=np.float64),
        np.asarray(x_int, dtype=np.float64),
        np.ones(m.shape[0]) if weight_rows is None else np.asarray(weight_rows, dtype=np.float64),
        np.ones(n) if weight_vars is None else np.asarray(weight_vars, dtype=np.float64),
        float(rel_tol),
        int(max_iter),
        out,
    )
    return out if ok else None


def interior_allocation(
    thr: FloatArray, sf: FloatArray, cap: FloatArray, count: FloatArray
) -> FloatArray:
    """A strictly interior point of the base constraints (:class:`BaseLP` with ``count``):
    every usable entry gets ``0.5 · min(cap_t / Σ_j count_j sf_j, 1 / n_types)``, so row sums
    and capacity use are at most half their bounds."""
    nt = thr.shape[1]
    per = 0.5 * np.minimum(cap / max(float(np.sum(count * sf)), 1e-300), 1.0 / nt)
    return np.where(thr > 0, per[None, :], 0.0)

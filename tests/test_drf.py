"""DRF (scheduling/drf.py): the NSDI'11 paper's example on GPUs, cores and memory, by hand."""

from __future__ import annotations

import numpy as np

from clustersim.engine import simulate
from scheduling.registry import make_placement, make_policy
from tests.simple import fixed_rates, jobs
from tests.test_resources import limited


def paper_example(n_a: int = 5, n_b: int = 5):  # type: ignore[no-untyped-def]
    """Ghodsi et al. §4.1: 9 cores and 18 GB; user A's tasks <1 core, 4 GB>, B's <3 cores,
    1 GB>. Here each task is a 1-GPU job of 100 s on one node of 20 GPUs (a GPU share of
    1/20 per task, below both dominant shares), all submitted at 0."""
    n = n_a + n_b
    t = jobs(
        [(0.0, 1, 100.0)] * n,
        user=["A"] * n_a + ["B"] * n_b,
        cpu=[1.0] * n_a + [3.0] * n_b,
        mem_gb=[4.0] * n_a + [1.0] * n_b,
    )
    return t, limited([("A", 20)], cpu=[9], mem=[18])


def test_drf_reproduces_the_papers_allocation_three_tasks_for_a_two_for_b() -> None:
    # progressive filling, shares (dominant: A memory 4/18 a task, B cores 3/9 a task):
    # A 0 -> 2/9, B 0 -> 1/3, A 2/9 -> 4/9, B 1/3 -> 2/3, A 4/9 -> 2/3 (9 cores used,
    # 14 GB); then A's next needs 1 core (none left), B's 3: nobody else fits.
    # At 100 all five end; again A, B, A, B (A's last two, B's 2 -> 2/3), then B needs 3 of
    # the 1 core left: B's last waits until 200.
    t, cl = paper_example()
    r = simulate(t, cl, make_policy("drf"), make_placement("consolidate"), rates=fixed_rates(t, cl))
    a, b = slice(0, 5), slice(5, 10)
    assert r.first_start[a].tolist() == [0.0, 0.0, 0.0, 100.0, 100.0]
    assert r.first_start[b].tolist() == [0.0, 0.0, 100.0, 100.0, 200.0]
    assert r.finish[b].tolist() == [100.0, 100.0, 200.0, 200.0, 300.0]
    # at 0: A holds <3 cores, 12 GB>, B <6 cores, 2 GB>: dominant shares 12/18 = 6/9
    first = r.stints.start == 0.0
    held = r.stints.job[first]
    assert sorted(held.tolist()) == [0, 1, 2, 5, 6]
    assert r.aux is not None
    cpu = r.aux.cpu_dev[held] * r.stints.devices[first]
    mem = r.aux.mem_dev[held] * r.stints.devices[first]
    is_a = held < 5
    assert (cpu[is_a].sum(), mem[is_a].sum()) == (3.0, 12.0)
    assert (cpu[~is_a].sum(), mem[~is_a].sum()) == (6.0, 2.0)


def test_fifo_on_the_same_jobs_gives_user_a_everything_it_asks_first() -> None:
    # strict FIFO in arrival order (A's five first): A0..A3 take 4 cores and 16 GB; A4 needs
    # 4 GB of the 2 left and blocks the queue: B starts nothing until A's jobs end.
    t, cl = paper_example()
    r = simulate(
        t, cl, make_policy("fifo"), make_placement("consolidate"), rates=fixed_rates(t, cl)
    )
    assert r.first_start[:5].tolist() == [0.0, 0.0, 0.0, 0.0, 100.0]
    assert (r.first_start[5:] >= 100.0).all()


def test_preemptive_drf_takes_resources_back_when_a_new_user_arrives() -> None:
    # user A's five jobs of 1 GPU, 1 core, 1 GB fill 5 of 5 cores at 0; user B's job
    # (1 GPU, 1 core) arrives at 10. Refilling from scratch: A 1/5, B 1/5, then A, A, A
    # (tie A first; A's shares 2/5..4/5), so A keeps 4 and its last job (A4) is suspended.
    t = jobs(
        [(0.0, 1, 100.0)] * 5 + [(10.0, 1, 50.0)],
        user=["A"] * 5 + ["B"],
        cpu=[1.0] * 6,
    )
    cl = limited([("A", 8)], cpu=[5])
    plain = simulate(t, cl, make_policy("drf"), rates=fixed_rates(t, cl))
    assert plain.first_start[5] == 100.0  # non-preemptive: B waits for a core
    pre = simulate(t, cl, make_policy("drf", preemptive=True), rates=fixed_rates(t, cl))
    assert pre.first_start[5] == 10.0
    assert pre.preemptions.tolist() == [0, 0, 0, 0, 1, 0]
    # A4 ran 10 s, waits until B ends at 60, then does its last 90 s (no restore cost)
    assert pre.finish[4] == 150.0
    assert pre.finish[5] == 60.0


def test_drf_without_demands_fills_by_gpu_share() -> None:
    # no CPU or memory: dominant share = GPU share. 4 GPUs; A asks 2-GPU jobs, B 1-GPU ones:
    # A 0 -> 1/2, B 0 -> 1/4, B 1/4 -> 1/2, A's next needs 2 of 0 left.
    t = jobs([(0.0, 2, 10.0)] * 2 + [(0.0, 1, 10.0)] * 3, user=["A", "A", "B", "B", "B"])
    cl = limited([("A", 4)], cpu=[np.inf])
    r = simulate(t, cl, make_policy("drf"), rates=fixed_rates(t, cl))
    assert r.first_start.tolist() == [0.0, 10.0, 0.0, 0.0, 10.0]

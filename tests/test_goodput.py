"""Pollux's goodput model (clustersim/goodput.py) against hand-computed values from the
profile CSVs and against the reference simulator's formulas restated here
(docs/pollux-fidelity.md, section 2)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from clustersim.goodput import Application, consolidated, load


@pytest.fixture(scope="module")
def cifar(shared_data: Path) -> Application:
    app = load("cifar10", str(shared_data / "throughput" / "pollux"))
    assert app is not None
    return app


def test_it_reads_the_step_time_of_a_profiled_row(cifar: Application) -> None:
    # placements.csv: "1,45,0.05048525333404541,0.000504022404551506"
    step, sync = cifar.step_time((1,), 45.0)
    assert float(step) == pytest.approx(0.05048525333404541)
    assert float(sync) == pytest.approx(0.000504022404551506)


def test_it_interpolates_the_step_time_linearly_in_the_local_batch(cifar: Application) -> None:
    # rows "1,32,0.0427886962890625,..." and "1,45,0.05048525333404541,...": 38.5 is halfway
    step, _ = cifar.step_time((1,), 38.5)
    assert float(step) == pytest.approx((0.0427886962890625 + 0.05048525333404541) / 2)


def test_it_looks_placements_up_by_their_smallest_rotation(cifar: Application) -> None:
    # "12,64,0.17025303840637207,0.11205555114746091" is the row of (2, 1) too
    step, sync = cifar.step_time((2, 1), 64.0)
    assert float(step) == pytest.approx(0.17025303840637207)
    assert float(sync) == pytest.approx(0.11205555114746091)


def test_an_epoch_ends_at_the_smallest_progress_over_the_batch_sizes(cifar: Application) -> None:
    # first rows' progress: 391.0 (128), 390.71438596642224 (256), 392.46 (512), ...
    assert cifar.boundaries[0] == 0.0
    assert cifar.boundaries[1] == pytest.approx(390.71438596642224)
    assert cifar.epoch(0.0) == 0
    assert cifar.epoch(390.7) == 0
    assert cifar.epoch(390.72) == 1
    assert cifar.epoch(1e12) == cifar.max_epochs - 1
    assert len(cifar.boundaries) == 101


def test_efficiency_is_one_at_the_initial_batch_and_falls_with_the_batch(
    cifar: Application,
) -> None:
    assert float(cifar.efficiency(128.0, 0)) == pytest.approx(1.0)
    # validation-256.csv, first row: grad_sqr 17.379458169870425, grad_var 13.937760473946334
    sqr, var, scale = 17.379458169870425, 13.937760473946334, 2.0
    gain = (var + sqr) / (var / scale + sqr)
    assert float(cifar.gain(256.0, 0)) == pytest.approx(gain)
    assert float(cifar.efficiency(256.0, 0)) == pytest.approx(gain / scale)
    assert gain / scale < 1.0


def test_gradient_statistics_are_linear_between_profiled_batch_sizes(cifar: Application) -> None:
    # 192 is halfway between 128 (sqr 8.947307535897329) and 256 (17.379458169870425)
    sqr, var = cifar.grad_stats(192.0, 0)
    assert float(sqr) == pytest.approx((8.947307535897329 + 17.379458169870425) / 2)
    assert float(var) == pytest.approx((5.066593295150894 + 13.937760473946334) / 2)


def test_efficiency_is_the_noise_scale_formula(cifar: Application) -> None:
    # the reference's identity: E = (PGNS + M0) / (PGNS + M), PGNS = M0 var / sqr
    for epoch in (0, 10, 99):
        for batch in (128.0, 300.0, 1024.0, 4096.0):
            sqr, var = (float(v) for v in cifar.grad_stats(batch, epoch))
            pgns = 128.0 * var / sqr
            want = (pgns + 128.0) / (pgns + batch)
            assert float(cifar.efficiency(batch, epoch)) == pytest.approx(want)


def test_goodput_of_a_configuration_is_gain_over_step_time(cifar: Application) -> None:
    # one GPU, atomic batch 64, no accumulation: batch 64 < init 128 is off the profile, so
    # take two GPUs (11 in placements.csv) at atomic 64: batch 128, gain 1
    step, sync = (float(v) for v in cifar.step_time((1, 1), 64.0))
    assert cifar.goodput((1, 1), 0, 64, 0) == pytest.approx(1.0 / step)
    # with one accumulation step the batch is 256 and a step takes step + (step - sync)
    g = float(cifar.gain(256.0, 0))
    assert cifar.goodput((1, 1), 0, 64, 1) == pytest.approx(g / (step + (step - sync)))


def reference_optimize(app: Application, placement: tuple[int, ...], epoch: int) -> float:
    """The reference's batch-size search (``GoodputFunction.optimize`` with accumulation),
    restated one candidate at a time on the true (profiled) step times."""
    r = sum(placement)
    lo = max(app.init_bsz, app.min_local * r)
    best = 0.0
    for batch in np.geomspace(lo, app.max_bsz, 50).tolist():
        local = batch / r
        accum = math.ceil(local / app.max_local - 1e-8) - 1
        if r == 1 and local > app.init_bsz + 1e-8:
            accum = max(accum, 1)
        atomic = math.ceil(local / (accum + 1) - 1e-8)
        if not app.min_local <= atomic <= app.max_local:
            continue
        step, sync = (float(v) for v in app.step_time(placement, float(atomic)))
        if not math.isfinite(step):
            continue
        total = r * atomic * (accum + 1)
        scale = total / app.init_bsz
        sqr, var = (float(v) for v in app.grad_stats(total, epoch))
        gain = (var + sqr) / (var / scale + sqr)
        best = max(best, gain / (step + accum * (step - sync)))
    return best


@pytest.mark.parametrize("model", ["cifar10", "bert", "yolov3", "imagenet"])
def test_best_configuration_matches_the_reference_search(model: str, shared_data: Path) -> None:
    app = load(model, str(shared_data / "throughput" / "pollux"))
    assert app is not None
    for replicas in (1, 2, 4, 6, 8, 16, 17):
        for epoch in (0, app.max_epochs // 2, app.max_epochs - 1):
            placement = consolidated(replicas)
            cfg = app.best(placement, epoch)
            assert cfg.goodput == pytest.approx(reference_optimize(app, placement, epoch))
            if cfg.goodput > 0:
                assert cfg.batch == replicas * cfg.atomic * (cfg.accum + 1)
                assert app.goodput(placement, epoch, cfg.atomic, cfg.accum) == pytest.approx(
                    cfg.goodput
                )


def test_larger_batches_pay_off_later_in_training(cifar: Application) -> None:
    # the gradient noise grows as training goes on, so 16 GPUs choose a larger batch late
    early = cifar.best(consolidated(16), 0)
    late = cifar.best(consolidated(16), 99)
    assert late.batch > early.batch
    assert late.goodput > early.goodput


def test_ncf_keeps_its_fixed_batch(shared_data: Path) -> None:
    app = load("ncf", str(shared_data / "throughput" / "pollux"))
    assert app is not None
    cfg = app.best((1,), 0)
    # the reference: local 32768 on one replica, accumulation at least 1 -> atomic 16384
    assert (cfg.batch, cfg.atomic, cfg.accum) == (32768, 16384, 1)


def test_the_3d_interpolation_is_scipys(cifar: Application) -> None:
    from scipy.interpolate import LinearNDInterpolator

    q = np.array([[5.0, 17.0, 32.0], [5.0, 17.0, 100.0], [7.0, 26.0, 40.0]])
    want = LinearNDInterpolator(cifar.points, cifar.values)(q)
    np.testing.assert_allclose(cifar._interpolate(q), want)


def test_unknown_models_have_no_profile() -> None:
    assert load("resnet50") is None

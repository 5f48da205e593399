"""Per-user fair share and per-type allocation over time (clustersim.fairness), by hand."""

from __future__ import annotations

import numpy as np
import pytest

from clustersim.fairness import binned_devices, job_class, size_class, user_shares


def test_two_users_overlapping_halfway_split_the_overlap() -> None:
    # 4 devices; a in the system on [0, 10), b on [5, 15).
    # A(t) = 1 on [0, 5), 2 on [5, 10), 1 on [10, 15):
    # F_a = 4*5 + 2*5 = 30, F_b = 2*5 + 4*5 = 30.
    s = user_shares(["a", "b"], [0.0, 5.0], [10.0, 15.0], [20.0, 40.0], capacity=4)
    assert s.users == ["a", "b"]
    assert s.fair.tolist() == pytest.approx([30.0, 30.0])
    assert s.received.tolist() == pytest.approx([20.0, 40.0])
    assert s.ratio.tolist() == pytest.approx([2 / 3, 4 / 3])
    assert s.active_s.tolist() == pytest.approx([10.0, 10.0])


def test_a_users_overlapping_jobs_count_once_and_gaps_not_at_all() -> None:
    # 2 devices. a: [0, 4), [2, 6), [8, 10) -> active on [0, 6) and [8, 10); b: [0, 10).
    # A = 2 on [0, 6), 1 on [6, 8), 2 on [8, 10).
    # F_a = 6*1 + 2*1 = 8; F_b = 6*1 + 2*2 + 2*1 = 12 (sum 20 = 2 devices * 10 s).
    s = user_shares(
        ["a", "a", "b", "a"],
        [0.0, 2.0, 0.0, 8.0],
        [4.0, 6.0, 10.0, 10.0],
        [1.0, 2.0, 3.0, np.nan],
        capacity=2,
    )
    assert s.users == ["a", "b"]
    assert s.fair.tolist() == pytest.approx([8.0, 12.0])
    assert s.received.tolist() == pytest.approx([3.0, 3.0])  # NaN attained counts 0
    assert s.jobs.tolist() == [3, 1]
    assert s.active_s.tolist() == pytest.approx([8.0, 10.0])


def test_a_job_with_no_time_in_the_system_has_no_fair_share() -> None:
    s = user_shares(["a", "b"], [5.0, 0.0], [5.0, 2.0], [0.0, 2.0], capacity=3)
    assert s.fair.tolist() == pytest.approx([0.0, 6.0])
    assert np.isnan(s.ratio[0])
    assert user_shares([], [], [], [], capacity=3).users == []


def test_binned_devices_is_the_exact_time_average_per_bin() -> None:
    # group 0: 2 devices on [1, 3); group 1: 4 devices on [0, 4) and 1 device on [3, 4)
    out = binned_devices(
        np.array([0, 1, 1]),
        2,
        [2, 4, 1],
        [1.0, 0.0, 3.0],
        [3.0, 4.0, 4.0],
        [0.0, 2.0, 4.0],
    )
    assert out.tolist() == [pytest.approx([1.0, 1.0]), pytest.approx([4.0, 4.5])]


def test_job_classes_drop_the_batch_size_and_size_classes_follow_the_buckets() -> None:
    assert job_class("ResNet-50 (batch size 64)") == "ResNet-50"
    assert job_class("Transformer") == "Transformer"
    assert size_class([1, 2, 4, 5, 8, 9, 64]) == [
        "1 GPU",
        "2–4 GPUs",
        "2–4 GPUs",
        "5–8 GPUs",
        "5–8 GPUs",
        "9+ GPUs",
        "9+ GPUs",
    ]

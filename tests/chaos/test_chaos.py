"""The short chaos probes (issue 11) against the real stack on private services.

The long ones (a 20 s database outage, an 11 GiB gzip bomb, a 1,000,000-column header, a
2 GB upload, 500 runs of one user against one of another) and the recovery, fairness and
memory targets are in ``make bench`` (``python -m bench chaos``, ``bench/chaos.py``).
"""

from __future__ import annotations

import pytest

from tests.chaos import probes
from tests.chaos.probes import ChaosStack

pytestmark = [pytest.mark.chaos, pytest.mark.slow]


def test_a_sigkilled_worker_loses_no_run(stack: ChaosStack) -> None:
    probes.probe_worker_sigkill(stack)


def test_an_upload_is_ready_within_seconds_while_every_simulation_slot_is_busy(
    stack: ChaosStack,
) -> None:
    out = probes.probe_upload_while_simulating(stack, runs_n=16, jobs=120)
    print(f"\n120-job upload ready in {out['upload_ready_s']:.2f} s; runs then: {out['runs']}")


def test_a_broker_restarted_empty_strands_nothing(stack: ChaosStack) -> None:
    probes.probe_broker_restart(stack)


def test_creating_while_the_broker_is_down_leaves_one_object_that_runs(
    stack: ChaosStack,
) -> None:
    probes.probe_create_while_broker_down(stack)


def test_editing_a_workload_while_it_parses_keeps_the_edit_and_the_parse(
    stack: ChaosStack,
) -> None:
    probes.probe_edit_while_parsing(stack)


def test_a_gzip_bomb_fails_with_a_reason_and_the_worker_lives(stack: ChaosStack) -> None:
    probes.probe_gzip_bomb(stack)


def test_huge_headers_fail_with_a_reason_and_block_nobody(stack: ChaosStack) -> None:
    probes.probe_huge_header(stack)

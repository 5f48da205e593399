"""Fixtures of the chaos tests: a private PostgreSQL cluster (one a session) and, per module,
a private Redis and a :class:`~tests.chaos.probes.ChaosStack` on them.

Without ``redis-server``, ``initdb`` or ``postgres`` on this machine the tests are skipped,
unless ``CLUSTERSIM_REQUIRE_SERVICES=1`` (CI): then they fail.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.chaos.probes import ChaosStack
from tests.harness import (
    PrivatePostgres,
    PrivateRedis,
    PrivateServices,
    missing_binaries,
    require,
)


@pytest.fixture(scope="session")
def private_pg() -> Iterator[PrivatePostgres]:
    require(missing_binaries(), "programs for the private services")
    pg = PrivatePostgres()
    try:
        pg.start()
        yield pg
    finally:
        pg.destroy()


@pytest.fixture(scope="module")
def chaos_stack(
    private_pg: PrivatePostgres, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ChaosStack]:
    tmp = tmp_path_factory.mktemp("chaos")
    redis = PrivateRedis(tmp / "redis")
    redis.start()
    stack = ChaosStack(tmp, PrivateServices(private_pg, redis))
    try:
        stack.up()
        yield stack
    finally:
        try:
            stack.down()
        finally:
            redis.stop()


@pytest.fixture
def stack(chaos_stack: ChaosStack) -> Iterator[ChaosStack]:
    """The module's stack, idle and healthy; whatever a probe leaves is cleared after it."""
    chaos_stack.ensure_up()
    yield chaos_stack
    chaos_stack.reset()

"""``make run`` says how to sign in last: ``manage.py ready`` waits for every worker's "ready"
line and for the web server, then prints the sign-in line and the API token together."""

from __future__ import annotations

import io
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.authtoken.models import Token

from tests.django.conftest import ROOT

READY_LINE = "[2026-01-01 00:00:00,000: INFO/MainProcess] {name}@host ready.\n"
BANNER = " -------------- {name}@host v5.7.0 (collider)\n[queues]\n"


def _ready(
    live_server: Any, logs: list[Path], timeout: float = 10, **kw: Any
) -> tuple[str, str, float]:
    out, err = io.StringIO(), io.StringIO()
    t0 = time.monotonic()
    call_command(
        "ready",
        url=live_server.url,
        logs=[str(p) for p in logs],
        timeout=timeout,
        stdout=out,
        stderr=err,
        **kw,
    )
    return out.getvalue(), err.getvalue(), time.monotonic() - t0


@pytest.mark.django_db(transaction=True)
def test_it_waits_for_every_worker_then_prints_the_sign_in_and_the_token_together(
    live_server: Any, owner: Any, tmp_path: Path
) -> None:
    sim, parse = tmp_path / "worker-sim.log", tmp_path / "worker-parse.log"
    sim.write_text(BANNER.format(name="sim") + READY_LINE.format(name="sim"))
    parse.write_text(BANNER.format(name="parse"))  # started, not ready yet

    def later() -> None:
        time.sleep(0.8)
        with parse.open("a") as fh:
            fh.write(READY_LINE.format(name="parse"))

    threading.Thread(target=later).start()
    out, err, took = _ready(live_server, [sim, parse], user="alice", password="alice-password")
    assert took >= 0.8  # it waited for the parse worker
    assert err == ""
    lines = [x for x in out.splitlines() if x.strip()]
    token = Token.objects.get(user=owner).key
    url = live_server.url
    assert lines[0] == f"clustersim is ready: {url}  (sign in as alice / alice-password)"
    assert lines[1] == f"  API token for alice: {token}  (header: Authorization: Token ...)"
    assert str(parse) in lines[-1]


@pytest.mark.django_db(transaction=True)
def test_a_worker_that_never_gets_ready_is_named_and_the_sign_in_still_shown(
    live_server: Any, owner: Any, tmp_path: Path
) -> None:
    stuck = tmp_path / "worker-sim.log"
    stuck.write_text(BANNER.format(name="sim"))
    out, err, _ = _ready(live_server, [stuck], timeout=0.5, user="alice", password="wrong")
    assert str(stuck) in err and "not ready" in err
    # a password that is not the user's is not shown as if it were
    assert "(sign in as alice)" in out and "API token for alice" in out


def _run_recipe() -> list[str]:
    text = (ROOT / "Makefile").read_text()
    recipe = text.split("\nrun: install\n", 1)[1].split("\n\n", 1)[0]
    return recipe.splitlines()


def test_make_run_says_how_to_sign_in_once_the_workers_and_the_web_server_started() -> None:
    lines = _run_recipe()

    def index(pattern: str) -> int:
        found = [i for i, x in enumerate(lines) if re.search(pattern, x)]
        assert len(found) == 1, (pattern, found)
        return found[0]

    ready = index(r"\$\(MANAGE\) ready ")
    for worker in ("sim", "parse", "housekeeping"):
        assert index(rf"CLUSTERSIM_WORKER_QUEUES={worker} ") < ready
    assert index(r"runserver .*&") < ready  # the web server runs in the background meanwhile
    assert "--logs $(WORKER_LOGS)" in lines[ready]
    # nothing else prints the sign-in or the token (they are said once, together, last)
    assert not any("sign in" in x or "planner token" in x for x in lines)


def test_make_run_gives_parsing_a_worker_of_its_own() -> None:
    """Uploads never wait behind simulations: one worker per role, each serving only its own
    queue (the timing with real workers: tests/chaos)."""
    roles = [
        m.group(1)
        for line in _run_recipe()
        if (m := re.search(r"CLUSTERSIM_WORKER_QUEUES=(\S+) \$\(CELERY_WORKER\)", line))
    ]
    assert sorted(roles) == ["housekeeping", "parse", "sim"]

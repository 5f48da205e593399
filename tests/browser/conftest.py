"""Browser tests: Playwright (sync API) driving Debian's chromium against ``live_server``.

The app runs in pytest-django's ``live_server`` thread; a real Celery worker runs in another
thread of the test process (``celery.contrib.testing``: the worker's own consumer, pool and
task routing, over the in-memory broker), so uploads are parsed and runs are simulated
asynchronously, as in production, and the pages' live progress is exercised. Both threads
share the test database (Django's in-memory SQLite test database is shared-cache).

Chromium comes from Debian (``apt-get install chromium``, done by ``.ci/run``), never from
Playwright's download. When it is missing these tests are skipped with the reason, or fail
when ``CLUSTERSIM_REQUIRE_SERVICES=1`` (CI).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def unavailable(reason: str) -> None:
    """Skip with ``reason``, or fail when the services are required (CI)."""
    if os.environ.get("CLUSTERSIM_REQUIRE_SERVICES") == "1":
        pytest.fail(f"{reason} (CLUSTERSIM_REQUIRE_SERVICES=1: browser tests must run)")
    pytest.skip(reason)


def find_chromium() -> str | None:
    """Debian's chromium: ``$CLUSTERSIM_CHROMIUM`` if set, else ``chromium`` on the PATH."""
    wanted = os.environ.get("CLUSTERSIM_CHROMIUM")
    if wanted:
        return wanted if Path(wanted).is_file() else None
    return shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None
    )


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = find_chromium()
    if path is None:
        unavailable("Debian's chromium is not installed: apt-get install -y chromium")
    return str(path)


@pytest.fixture(scope="session")
def browser(chromium_path: str) -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed: pip install -e '.[dev]'")
    # Playwright's sync API keeps an event loop in this thread; the test's own ORM calls are
    # synchronous and safe (Django only sees the loop, not a coroutine).
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
    finally:
        pw.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def celery_worker(settings: Any) -> Iterator[Any]:
    """A real Celery worker in a thread of this process (tasks are not run eagerly)."""
    from celery.contrib.testing.worker import start_worker

    from config.celery import app

    settings.CLUSTERSIM_HEARTBEAT_S = 0.5  # fewer writes to the shared test database
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        with start_worker(
            app, pool="solo", concurrency=1, perform_ping_check=False, shutdown_timeout=30
        ) as worker:
            yield worker
    finally:
        app.conf.task_always_eager = eager


class Console:
    """JavaScript console errors, uncaught exceptions and off-host requests of a page."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.errors: list[str] = []
        self.foreign: list[str] = []

    def attach(self, page: Any) -> None:
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.errors.append(f"{page.url}: uncaught {exc}"))
        page.on("request", self._request)

    def _console(self, msg: Any) -> None:
        if msg.type == "error":
            self.errors.append(f"{msg.location.get('url', '')}: {msg.text}")

    def _request(self, request: Any) -> None:
        url = request.url
        if not (url.startswith(self.base) or url.startswith("data:") or url.startswith("blob:")):
            self.foreign.append(url)


@pytest.fixture
def page(browser: Any, live_server: Any) -> Iterator[tuple[Any, Console]]:
    from django.core.cache import cache

    cache.clear()  # chart answers cached by earlier tests of this process
    context = browser.new_context(viewport={"width": 1366, "height": 850}, accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    console = Console(live_server.url)
    console.attach(pg)
    try:
        yield pg, console
    finally:
        context.close()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS

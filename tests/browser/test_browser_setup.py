"""Without chromium the browser tests skip with the reason, or fail when CI requires them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import find_chromium, unavailable


def test_a_missing_browser_fails_when_services_are_required(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLUSTERSIM_REQUIRE_SERVICES", "1")
    with pytest.raises(pytest.fail.Exception, match="browser tests must run"):
        unavailable("Debian's chromium is not installed")


def test_a_missing_browser_skips_with_the_reason_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLUSTERSIM_REQUIRE_SERVICES", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install"):
        unavailable("Debian's chromium is not installed: apt-get install -y chromium")


def test_the_browser_is_found_where_it_is_said_to_be(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CLUSTERSIM_CHROMIUM", str(tmp_path / "nowhere"))
    assert find_chromium() is None
    fake = tmp_path / "chromium"
    fake.write_text("")
    monkeypatch.setenv("CLUSTERSIM_CHROMIUM", str(fake))
    assert find_chromium() == str(fake)

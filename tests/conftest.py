"""Shared fixtures. The reference data live in ``../shared/data`` beside the repository."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ``shared/data``; fails (never skips) when it is missing."""
    assert SHARED_DATA.is_dir(), f"reference data not found at {SHARED_DATA}"
    return SHARED_DATA

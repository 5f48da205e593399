"""Production settings refuse a weak secret key, naming the variable and the rule."""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import ENV_EXAMPLE_SECRET_KEY, env_secret_key

ROOT = Path(__file__).resolve().parents[2]


def _env_file_value(path: Path, name: str) -> str:
    for line in path.read_text().splitlines():
        if line.startswith(f"{name}="):
            return line.partition("=")[2].strip()
    raise AssertionError(f"{path.name} sets no {name}")


def _makefile_key() -> str:
    m = re.search(r"DJANGO_SECRET_KEY=(\S+)", (ROOT / "Makefile").read_text())
    assert m, "the Makefile's DEPLOY_ENV sets no DJANGO_SECRET_KEY"
    return m.group(1)


WEAK = {
    "abc": "has 3 characters; at least 50",
    "x" * 49: "has 49 characters",
    "ab" * 40: "has 2 distinct characters; at least 5",
    "django-insecure-" + secrets.token_urlsafe(50): "starts with 'django-insecure'",
    ENV_EXAMPLE_SECRET_KEY: "placeholder of .env.example",
}


@pytest.mark.parametrize(("key", "why"), WEAK.items(), ids=lambda v: str(v)[:20])
def test_a_weak_key_is_refused_naming_the_rule(
    monkeypatch: pytest.MonkeyPatch, key: str, why: str
) -> None:
    monkeypatch.setenv("DJANGO_SECRET_KEY", key)
    with pytest.raises(ImproperlyConfigured, match="DJANGO_SECRET_KEY") as info:
        env_secret_key("DJANGO_SECRET_KEY")
    assert why in str(info.value) and "secrets.token_urlsafe" in str(info.value)
    assert key not in str(info.value) or len(key) < 10  # the message never echoes a real key


@pytest.mark.parametrize(
    "key", [secrets.token_urlsafe(50), secrets.token_hex(25), "abcde" * 10, _makefile_key()]
)
def test_a_strong_key_is_accepted(monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    monkeypatch.setenv("DJANGO_SECRET_KEY", key)
    assert env_secret_key("DJANGO_SECRET_KEY") == key


def test_the_placeholder_is_the_one_in_env_example() -> None:
    assert _env_file_value(ROOT / ".env.example", "DJANGO_SECRET_KEY") == ENV_EXAMPLE_SECRET_KEY


def _production_check(key: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DJANGO_SECRET_KEY": key,
        "DJANGO_ALLOWED_HOSTS": "clustersim.example",
        "DATABASE_URL": "sqlite:///:memory:",
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_production_settings_do_not_load_with_the_example_key_and_do_with_a_real_one() -> None:
    bad = _production_check(ENV_EXAMPLE_SECRET_KEY)
    assert bad.returncode != 0
    assert "ImproperlyConfigured" in bad.stderr and "placeholder of .env.example" in bad.stderr
    short = _production_check("abc")
    assert short.returncode != 0 and "has 3 characters" in short.stderr
    good = _production_check(_makefile_key())
    assert good.returncode == 0, good.stderr[-2000:]

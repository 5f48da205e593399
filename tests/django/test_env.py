"""Typed environment helpers fail loudly on bad values."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, env_list, env_str, parse_database_url


def test_it_reads_typed_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_BOOL", "Yes")
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_FLOAT", "2.5")
    monkeypatch.setenv("X_LIST", "a, b,,c")
    assert env_bool("X_BOOL") is True
    assert env_int("X_INT") == 42
    assert env_float("X_FLOAT") == 2.5
    assert env_list("X_LIST") == ["a", "b", "c"]
    assert env_str("X_MISSING", "default") == "default"


@pytest.mark.parametrize(
    ("reader", "value"),
    [(env_bool, "maybe"), (env_int, "4.5"), (env_float, "fast"), (env_float, "inf")],
)
def test_it_rejects_malformed_values_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, reader: object, value: str
) -> None:
    monkeypatch.setenv("X_BAD", value)
    with pytest.raises(ImproperlyConfigured, match="X_BAD"):
        reader("X_BAD")  # type: ignore[operator]


def test_a_required_variable_must_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("X_REQUIRED", raising=False)
    with pytest.raises(ImproperlyConfigured, match="X_REQUIRED is required"):
        env_str("X_REQUIRED")


def test_it_parses_database_urls() -> None:
    pg = parse_database_url("postgres://u:p%40ss@db.example:6543/name?sslmode=require")
    assert pg["ENGINE"] == "django.db.backends.postgresql"
    assert (pg["USER"], pg["PASSWORD"], pg["HOST"], pg["PORT"], pg["NAME"]) == (
        "u",
        "p@ss",
        "db.example",
        "6543",
        "name",
    )
    assert pg["OPTIONS"] == {"sslmode": "require"}
    assert parse_database_url("sqlite:////tmp/x.db")["NAME"] == "/tmp/x.db"
    assert parse_database_url("sqlite:///:memory:")["NAME"] == ":memory:"


@pytest.mark.parametrize("url", ["mysql://x/y", "postgres://host/", "postgres://h:port/db"])
def test_it_rejects_unusable_database_urls(url: str) -> None:
    with pytest.raises(ImproperlyConfigured):
        parse_database_url(url)

"""Sign-in lock-outs (per account and per client address) and the API's rate limits."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from api import throttling
from config.env import env_rate, parse_rate
from tests.django.conftest import GAVEL_TRACE

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
ATTACKER = "203.0.113.66"
HOME = "198.51.100.7"
CAFE = "192.0.2.44"


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The lock-outs' clock, moved by hand (``clock.now += 60``)."""

    class Clock:
        now = 1_000_000.0

    c = Clock()
    monkeypatch.setattr(throttling, "_now", lambda: c.now)
    return c


def sign_in(username: str, password: str, address: str) -> Any:
    """A sign-in from a fresh client (no session) at ``address``."""
    return Client(REMOTE_ADDR=address).post(LOGIN, {"username": username, "password": password})


def signed_in(r: Any) -> bool:
    return bool(r.status_code == 302 and r["Location"] == "/")


def refused(r: Any) -> bool:
    return bool(r.status_code == 429 and "Too many failed sign-ins" in r.content.decode())


# -- sign-in ----------------------------------------------------------------------------------


def test_wrong_passwords_lock_the_account_after_five(owner: Any, clock: Any) -> None:
    answers = [sign_in("alice", f"guess-{i}", ATTACKER) for i in range(200)]
    # four plain refusals, then the fifth locks: it says so, and so does every later try
    assert all(r.status_code == 200 for r in answers[:4])
    assert "correct username and password" in answers[0].content.decode()
    assert all(refused(r) for r in answers[4:])
    assert answers[4]["Retry-After"] == "30"
    assert "try again in 30 seconds" in answers[4].content.decode()
    # refused tries are not checked, so they neither count nor lengthen the lock
    assert answers[-1]["Retry-After"] == "30"
    # the right password from the attacker's address is refused too while locked
    assert refused(sign_in("alice", "alice-password", ATTACKER))


def test_the_lock_doubles_with_each_failure_up_to_the_cap(
    owner: Any, clock: Any, settings: Any
) -> None:
    settings.CLUSTERSIM_LOGIN_MAX_LOCK_S = 200
    waits = []
    for i in range(8):
        r = sign_in("alice", f"guess-{i}", ATTACKER)
        waits.append(int(r["Retry-After"]) if r.status_code == 429 else 0)
        clock.now += 1000  # past any lock: the next try is checked
    assert waits == [0, 0, 0, 0, 30, 60, 120, 200]


def test_a_new_client_signs_in_once_the_lock_expires(owner: Any, clock: Any) -> None:
    for i in range(50):
        sign_in("alice", f"guess-{i}", ATTACKER)
    r = sign_in("alice", "alice-password", CAFE)
    assert refused(r) and int(r["Retry-After"]) == 30  # the account's lock, not forever
    clock.now += 31
    assert signed_in(sign_in("alice", "alice-password", CAFE))


def test_a_client_that_signed_in_before_is_not_held_by_the_accounts_lock(
    owner: Any, clock: Any
) -> None:
    assert signed_in(sign_in("alice", "alice-password", HOME))
    for i in range(100):
        sign_in("alice", f"guess-{i}", ATTACKER)
    assert refused(sign_in("alice", "alice-password", CAFE))
    assert signed_in(sign_in("alice", "alice-password", HOME))
    # ... and that does not unlock the account for the attacker
    assert refused(sign_in("alice", "alice-password", ATTACKER))


def test_a_correct_password_starts_the_count_again(owner: Any, clock: Any) -> None:
    for round_ in range(3):
        for i in range(4):
            assert sign_in("alice", f"typo-{round_}-{i}", HOME).status_code == 200
        assert signed_in(sign_in("alice", "alice-password", HOME))


def test_one_address_trying_many_accounts_is_locked(
    owner: Any, other: Any, clock: Any, settings: Any
) -> None:
    settings.CLUSTERSIM_LOGIN_IP_FAILURES = 10
    answers = [sign_in(f"user{i}", "password", ATTACKER) for i in range(12)]
    assert [refused(r) for r in answers] == [False] * 9 + [True] * 3
    assert refused(sign_in("mallory", "mallory-password", ATTACKER))
    # other addresses are not held; the accounts tried were each tried once
    assert signed_in(sign_in("mallory", "mallory-password", CAFE))


def test_usernames_are_counted_without_case(owner: Any, clock: Any) -> None:
    for i, name in enumerate(["alice", "ALICE", "Alice", " alice", "aLiCe"]):
        sign_in(name, f"guess-{i}", ATTACKER)
    assert refused(sign_in("alice", "alice-password", CAFE))


def test_the_admin_sign_in_is_guarded_too(owner: Any, clock: Any) -> None:
    owner.is_staff = True
    owner.save()
    client = Client(REMOTE_ADDR=ATTACKER)
    for i in range(5):
        r = client.post("/admin/login/", {"username": "alice", "password": f"guess-{i}"})
    assert "Too many failed sign-ins" in r.content.decode()
    r = client.post("/admin/login/", {"username": "alice", "password": "alice-password"})
    assert r.status_code == 200 and "Too many failed sign-ins" in r.content.decode()


def test_behind_a_proxy_the_forwarded_address_is_counted(
    owner: Any, clock: Any, settings: Any
) -> None:
    settings.CLUSTERSIM_LOGIN_IP_FAILURES = 3
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}

    def via_proxy(client_ip: str, username: str) -> Any:
        return Client(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=client_ip).post(
            LOGIN, {"username": username, "password": "x"}
        )

    for i in range(3):
        via_proxy(ATTACKER, f"u{i}")
    assert refused(via_proxy(ATTACKER, "u9"))
    assert not refused(via_proxy(CAFE, "u9"))


def test_without_trusted_proxies_a_forged_forwarded_for_changes_nothing(
    owner: Any, clock: Any, settings: Any
) -> None:
    settings.CLUSTERSIM_LOGIN_IP_FAILURES = 3
    for i in range(3):
        Client(REMOTE_ADDR=ATTACKER, HTTP_X_FORWARDED_FOR=f"10.9.9.{i}").post(
            LOGIN, {"username": f"u{i}", "password": "x"}
        )
    assert refused(sign_in("u9", "x", ATTACKER))


def test_a_failing_counter_cache_lets_sign_ins_through(owner: Any, settings: Any) -> None:
    settings.CACHES = {
        **settings.CACHES,
        "throttle": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens there
        },
    }
    for i in range(6):
        assert sign_in("alice", f"guess-{i}", ATTACKER).status_code == 200
    assert signed_in(sign_in("alice", "alice-password", ATTACKER))


# -- API rate limits ----------------------------------------------------------------------------


def _rates(settings: Any, **rates: str) -> None:
    base = {"anon": None, "user": None, "expensive": None}
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**base, **rates},
    }


def test_a_user_past_the_rate_gets_429_with_retry_after(
    api: Any, other_api: Any, settings: Any, clock: Any
) -> None:
    _rates(settings, user="5/minute")
    codes = [api.get("/api/v1/clusters/").status_code for _ in range(7)]
    assert codes == [200] * 5 + [429] * 2
    r = api.get("/api/v1/clusters/")
    assert "throttled" in r.json()["detail"] and 0 < int(r["Retry-After"]) <= 60
    assert other_api.get("/api/v1/clusters/").status_code == 200  # per user
    clock.now += 60  # the next minute
    assert api.get("/api/v1/clusters/").status_code == 200


def test_anonymous_requests_are_limited_per_address(anon_api: Any, settings: Any) -> None:
    _rates(settings, anon="3/minute")
    codes = [anon_api.get("/api/v1/runs/", REMOTE_ADDR=ATTACKER).status_code for _ in range(5)]
    assert codes == [401] * 3 + [429] * 2
    assert anon_api.get("/api/v1/runs/", REMOTE_ADDR=CAFE).status_code == 401
    # a wrong token counts as anonymous
    anon_api.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    codes = [anon_api.get("/api/v1/runs/", REMOTE_ADDR=CAFE).status_code for _ in range(3)]
    assert codes == [401, 401, 429]


def test_uploads_and_experiments_have_a_stricter_limit(
    api: Any, owner: Any, settings: Any, make_cluster: Any, make_workload: Any
) -> None:
    _rates(settings, user="100/minute", expensive="2/hour")
    for _ in range(3):  # reads are not counted as expensive
        assert api.get("/api/v1/workloads/").status_code == 200

    def upload() -> int:
        with GAVEL_TRACE.open("rb") as f:
            return int(api.post("/api/v1/workloads/", {"file": f}, format="multipart").status_code)

    assert [upload(), upload(), upload()] == [202, 202, 429]
    # the same budget covers experiments
    c, w = make_cluster(owner), make_workload(owner)
    body = {"name": "x", "clusters": [c.pk], "workloads": [w.pk], "policies": [{"name": "fifo"}]}
    assert api.post("/api/v1/experiments/", body, format="json").status_code == 429
    assert api.get("/api/v1/experiments/").status_code == 200


def test_off_lifts_a_limit(api: Any, settings: Any) -> None:
    _rates(settings, user="off")
    assert all(api.get("/api/v1/clusters/").status_code == 200 for _ in range(30))


@pytest.mark.parametrize(
    ("rate", "parsed"),
    [("100/minute", (100, 60)), ("20/hour", (20, 3600)), ("5/s", (5, 1)), ("off", None)],
)
def test_rates_are_read_in_drfs_syntax(rate: str, parsed: Any) -> None:
    assert parse_rate(rate) == parsed


@pytest.mark.parametrize("rate", ["100", "ten/minute", "5/fortnight", "0/minute", "-1/hour"])
def test_a_malformed_rate_stops_the_settings(monkeypatch: pytest.MonkeyPatch, rate: str) -> None:
    monkeypatch.setenv("X_RATE", rate)
    with pytest.raises(ImproperlyConfigured, match="X_RATE"):
        env_rate("X_RATE", "1/minute")

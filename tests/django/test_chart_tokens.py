"""The chart endpoints and their exports with an API token (``dashboard/access.py``): a script
reads ``/charts/...?format=csv`` as the API is read, and is answered JSON errors, never the
site's HTML pages."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


def _token(user: Any) -> str:
    return str(Token.objects.get_or_create(user=user)[0].key)


def _detail(response: Any, status: int) -> str:
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"] == "application/json", response["Content-Type"]
    return str(json.loads(response.content)["detail"])


def test_a_token_reads_a_charts_data_as_csv(client: Client, owner: Any, experiment: Any) -> None:
    run = experiment.runs.order_by("pk").first()
    r = client.get(
        f"/charts/runs/{run.pk}/slowest/?format=csv", HTTP_AUTHORIZATION=f"Token {_token(owner)}"
    )
    assert r.status_code == 200, r.content[:300]
    assert r["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.content.decode())))
    assert rows and "job_id" in rows[0]  # the slowest jobs of the run, one row each


def test_a_token_reads_every_kind_of_chart(client: Client, owner: Any, experiment: Any) -> None:
    run = experiment.runs.order_by("pk").first()
    urls = [
        f"/charts/experiments/{experiment.pk}/table/",
        f"/charts/runs/{run.pk}/ftf/",
        f"/charts/workloads/{run.workload_id}/gpus/",
        f"/charts/clusters/{run.cluster_id}/devices/",
        f"/charts/compare/cdf/?runs={run.pk}",
    ]
    auth = {"HTTP_AUTHORIZATION": f"Token {_token(owner)}"}
    for url in urls:
        r = client.get(url, **auth)
        assert r.status_code == 200, (url, r.content[:300])
        assert "title" in json.loads(r.content), url


def test_no_token_is_a_json_401(client: Client, experiment: Any) -> None:
    url = f"/charts/experiments/{experiment.pk}/table/?format=csv"
    r = client.get(url)
    assert "credentials were not provided" in _detail(r, 401)
    assert r["WWW-Authenticate"] == "Token"
    # a script asking for JSON, without format=
    r = client.get(f"/charts/experiments/{experiment.pk}/table/", HTTP_ACCEPT="application/json")
    assert "credentials" in _detail(r, 401)


def test_a_wrong_token_is_a_json_401(client: Client, experiment: Any) -> None:
    url = f"/charts/experiments/{experiment.pk}/table/?format=csv"
    r = client.get(url, HTTP_AUTHORIZATION="Token not-a-token")
    assert "Invalid token" in _detail(r, 401)
    r = client.get(url, HTTP_AUTHORIZATION="Basic YWxpY2U6YWxpY2UtcGFzc3dvcmQ=")
    assert "Authorization: Token" in _detail(r, 401)


def test_another_users_run_is_a_json_404(
    client: Client, other: Any, experiment: Any, make_experiment: Any
) -> None:
    run = experiment.runs.order_by("pk").first()
    auth = {"HTTP_AUTHORIZATION": f"Token {_token(other)}"}
    for url in (
        f"/charts/runs/{run.pk}/gantt/?format=csv",
        f"/charts/runs/{run.pk}/gantt/",
        f"/charts/experiments/{experiment.pk}/cdf/?format=json",
    ):
        assert _detail(client.get(url, **auth), 404) == "Not found.", url
    compare = f"/charts/compare/cdf/?runs={run.pk}&format=csv"
    assert _detail(client.get(compare, **auth), 404) == "no such run"
    # the owner's token and a chart that does not exist: JSON too, saying which
    mine = {"HTTP_AUTHORIZATION": f"Token {_token(experiment.owner)}"}
    assert "no chart 'nope'" in _detail(client.get(f"/charts/runs/{run.pk}/nope/", **mine), 404)
    assert "csv or json" in _detail(
        client.get(f"/charts/runs/{run.pk}/ftf/?format=xml", **mine), 400
    )


def test_the_browser_keeps_the_sites_pages(client: Client, web: Client, experiment: Any) -> None:
    url = f"/charts/experiments/{experiment.pk}/table/"
    # a signed-in page's fetch (session, Accept: application/json) is unchanged
    assert web.get(url, HTTP_ACCEPT="application/json").status_code == 200
    # a browser navigating to the URL without a session gets the site's 404 page, not JSON
    r = client.get(url, HTTP_ACCEPT="text/html,application/xhtml+xml,*/*;q=0.8")
    assert r.status_code == 404 and r["Content-Type"].startswith("text/html")

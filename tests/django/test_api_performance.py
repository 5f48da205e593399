"""What makes the API fast (issue 4) keeps its answers: the compiled serializers give DRF's
output, pagination counts only when it must, lists use a fixed small number of queries, and
the token cache forgets deleted tokens and deactivated users."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.renderers import JSONRenderer

from api import authentication
from api import serializers as s
from api.representation import FastRepresentationMixin
from planner.models import Cluster

pytestmark = pytest.mark.django_db

FAST = (
    s.AcceleratorTypeSerializer,
    s.ClusterSerializer,
    s.WorkloadSerializer,
    s.WorkloadListSerializer,
    s.ExperimentSerializer,
    s.RunSerializer,
    s.RunListSerializer,
)


def _sql(ctx: Any) -> list[str]:
    return [q["sql"] for q in ctx.captured_queries]


# -- compiled representation ------------------------------------------------------------------


@pytest.mark.parametrize("cls", FAST)
def test_every_fast_serializer_has_a_compiled_plan(cls: Any) -> None:
    assert cls.fast_plan() is not None


def _objects(
    owner: Any, make_cluster: Any, make_experiment: Any, make_accelerator: Any
) -> dict[Any, list[Any]]:
    from api.views import _experiment_queryset
    from planner.models import Cluster, Run, Workload

    acc = make_accelerator(owner, "Chip", fp16_tflops=10, memory_gb=16, release_year=2023)
    base = make_cluster(owner)
    base.clone("what-if")
    finished = make_experiment(owner, policies=("fifo", "sjf"), run=True)
    make_experiment(owner, seeds=(0, 1), placement="random", cluster=base)  # queued: no times
    Workload.objects.create(owner=owner, name="pending", original_filename="x.csv")
    assert finished.runs.filter(state="succeeded").count() == 2
    return {
        s.AcceleratorTypeSerializer: [acc],
        s.ClusterSerializer: list(Cluster.objects.all()),
        s.WorkloadSerializer: list(Workload.objects.all()),
        s.WorkloadListSerializer: list(Workload.objects.all()),
        s.ExperimentSerializer: list(_experiment_queryset(owner)),
        s.RunSerializer: list(Run.objects.all()),
        s.RunListSerializer: list(Run.objects.all()),
    }


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris"])
def test_the_compiled_output_is_drfs_output(
    owner: Any, make_cluster: Any, make_experiment: Any, make_accelerator: Any, zone: str
) -> None:
    objects = _objects(owner, make_cluster, make_experiment, make_accelerator)
    assert set(objects) == set(FAST)
    with timezone.override(zone):
        for cls, items in objects.items():
            assert items, cls
            for obj in items:
                fast = cls(obj).data
                generic = serializers.ModelSerializer.to_representation(cls(), obj)
                assert fast == generic, cls
                assert list(fast) == list(generic)  # same key order
                assert JSONRenderer().render(fast) == JSONRenderer().render(generic)
                many = cls(items, many=True).data
                assert json.loads(JSONRenderer().render(many))[items.index(obj)] == json.loads(
                    JSONRenderer().render(generic)
                )


def test_a_field_that_needs_the_request_keeps_drfs_path(owner: Any, make_cluster: Any) -> None:
    class Linked(FastRepresentationMixin, serializers.ModelSerializer):
        url = serializers.HyperlinkedIdentityField(view_name="api:cluster-detail")

        class Meta:
            model = Cluster
            fields = ("id", "url", "name")

    class WithMethod(FastRepresentationMixin, serializers.ModelSerializer):
        who = serializers.SerializerMethodField()

        class Meta:
            model = Cluster
            fields = ("id", "who")

        def get_who(self, obj: Any) -> str:
            return f"{self.context['user']}:{obj.name}"

    from rest_framework.test import APIRequestFactory

    cluster = make_cluster(owner)
    assert Linked.fast_plan() is None
    request = APIRequestFactory().get("/")
    data = Linked(cluster, context={"request": request}).data
    assert data["url"].endswith(f"/api/v1/clusters/{cluster.pk}/")
    # a method field runs on the serializer itself, with its own context
    assert WithMethod.fast_plan() is not None
    assert WithMethod(cluster, context={"user": "ann"}).data == {
        "id": cluster.pk,
        "who": "ann:small",
    }
    assert WithMethod(cluster, context={"user": "bob"}).data["who"] == "bob:small"


# -- lists read values_list rows ----------------------------------------------------------------

ROWS = (
    s.AcceleratorTypeSerializer,
    s.ClusterSerializer,
    s.WorkloadListSerializer,
    s.RunListSerializer,
)


def test_the_listed_serializers_read_rows_and_experiments_need_instances() -> None:
    for cls in ROWS:
        assert cls.row_plan() is not None, cls
    assert s.ExperimentSerializer.row_plan() is None  # method fields, annotations


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris"])
def test_rows_give_drfs_output(
    owner: Any, make_cluster: Any, make_experiment: Any, make_accelerator: Any, zone: str
) -> None:
    objects = _objects(owner, make_cluster, make_experiment, make_accelerator)
    with timezone.override(zone):
        for cls in ROWS:
            items = objects[cls]
            plan = cls.row_plan()
            rows = list(
                type(items[0])
                .objects.filter(pk__in=[o.pk for o in items])
                .values_list(*plan.select(plan.utc_text(connection.vendor)))
            )
            by_id = {o.pk: o for o in items}
            for item in cls.represent_rows(rows):
                generic = serializers.ModelSerializer.to_representation(cls(), by_id[item["id"]])
                assert list(item) == list(generic), cls  # same key order
                assert JSONRenderer().render(item) == JSONRenderer().render(generic), cls


def test_list_endpoints_answer_what_the_serializers_answer(
    api: Any, owner: Any, make_cluster: Any, make_experiment: Any, make_accelerator: Any
) -> None:
    from planner.models import Run

    objects = _objects(owner, make_cluster, make_experiment, make_accelerator)
    for url, cls in [
        ("/api/v1/accelerators/", s.AcceleratorTypeSerializer),
        ("/api/v1/clusters/", s.ClusterSerializer),
        ("/api/v1/workloads/", s.WorkloadListSerializer),
        ("/api/v1/runs/", s.RunListSerializer),
    ]:
        listed = api.get(url).json()["results"]
        by_id = {o.pk: o for o in objects[cls]}
        assert sorted(by_id) == sorted(i["id"] for i in listed), url
        for item in listed:
            generic = serializers.ModelSerializer.to_representation(cls(), by_id[item["id"]])
            assert item == json.loads(JSONRenderer().render(generic)), url
    # ordering and filters still apply to the rows
    ids = [r["id"] for r in api.get("/api/v1/runs/?ordering=id").json()["results"]]
    assert ids == sorted(Run.objects.values_list("id", flat=True))
    assert {r["state"] for r in api.get("/api/v1/runs/?state=queued").json()["results"]} == {
        "queued"
    }


def test_a_view_that_narrows_its_rows_keeps_drfs_list(
    owner: Any, make_experiment: Any, monkeypatch: Any
) -> None:
    from rest_framework.test import APIRequestFactory, force_authenticate

    from api import views

    make_experiment(owner, policies=("fifo", "sjf"))

    class SjfRuns(views.RunViewSet):
        def get_queryset(self) -> Any:
            return super().get_queryset().filter(policy="sjf")

    def no_rows(*args: Any) -> Any:
        raise AssertionError("the row path ignores get_queryset")

    monkeypatch.setattr(views, "_rows", no_rows)
    request = APIRequestFactory().get("/api/v1/runs/")
    force_authenticate(request, user=owner)
    body = SjfRuns.as_view({"get": "list"})(request).data
    assert [r["policy"] for r in body["results"]] == ["sjf"]


def test_postgresql_formats_date_times_as_drf_does() -> None:
    """``UtcIsoText`` (PostgreSQL's to_char) trimmed by ``_utc_text`` is DRF's date-time."""
    import datetime as dt

    psycopg = pytest.importorskip("psycopg")
    from api.representation import UtcIsoText, _utc_text

    try:
        conn = psycopg.connect(
            host="127.0.0.1", port=5432, user="postgres", dbname="postgres", connect_timeout=3
        )
    except psycopg.OperationalError:
        pytest.skip("no PostgreSQL at 127.0.0.1:5432")
    sql = "SELECT " + UtcIsoText.template % {"expressions": "%s::timestamptz"}
    field = serializers.DateTimeField()
    paris = dt.timezone(dt.timedelta(hours=1))
    values = [
        dt.datetime(2026, 11, 22, 6, 10, 0, 123456, tzinfo=dt.UTC),
        dt.datetime(2026, 11, 22, 6, 10, 0, tzinfo=dt.UTC),
        dt.datetime(2026, 11, 22, 6, 10, 0, 100000, tzinfo=dt.UTC),
        dt.datetime(2026, 1, 2, 3, 4, 5, 1, tzinfo=paris),
        dt.datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC),
    ]
    with conn, timezone.override("UTC"):
        for session_zone in ("UTC", "Europe/Paris"):  # to_char converts to UTC itself
            conn.execute(f"SET TIME ZONE '{session_zone}'")
            for value in values:
                (text,) = conn.execute(sql, [value]).fetchone()
                assert _utc_text(text) == field.to_representation(value), (value, text)


# -- what the API answers ------------------------------------------------------------------------


def test_run_lists_leave_out_the_summary_details_keep_it(
    api: Any, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, run=True)
    run = exp.runs.get()
    item = api.get("/api/v1/runs/").json()["results"][0]
    assert set(item) == set(s.RunListSerializer.Meta.fields)
    assert "summary" not in item
    assert item["state"] == "succeeded" and item["finished_at"].endswith("Z")
    detail = api.get(f"/api/v1/runs/{run.pk}/").json()
    assert set(detail) == set(s.RunSerializer.Meta.fields)
    assert detail["summary"]["jobs_total"] == 100
    assert {k: v for k, v in detail.items() if k != "summary"} == item
    # the metrics of many runs at once
    metrics = api.get(f"/api/v1/compare/?runs={run.pk}").json()["metrics"]
    assert metrics["jct_mean_s"] == [detail["summary"]["jct_mean_s"]]


def test_experiments_list_their_clusters_and_workloads(
    api: Any, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    from planner import services

    c1, c2 = make_cluster(owner, name="a"), make_cluster(owner, name="b")
    w = make_workload(owner)
    exps = [
        services.create_experiment(
            owner,
            name=f"e{i}",
            clusters=clusters,
            workloads=[w],
            policies=[{"name": "fifo", "params": {}}],
            load_factors=[1.0],
            seeds=[0],
            enqueue=False,
        )
        for i, clusters in enumerate([[c1], [c1, c2]])
    ]
    listed = {e["id"]: e for e in api.get("/api/v1/experiments/").json()["results"]}
    assert listed[exps[0].pk]["clusters"] == [c1.pk]
    assert listed[exps[1].pk]["clusters"] == [c2.pk, c1.pk]  # newest first
    assert all(e["workloads"] == [w.pk] for e in listed.values())
    detail = api.get(f"/api/v1/experiments/{exps[1].pk}/").json()
    assert detail == listed[exps[1].pk]
    assert detail["run_counts"]["queued"] == 2 and detail["runs_total"] == 2


def test_filters_still_apply_and_pagination_alone_skips_them(
    api: Any, owner: Any, make_experiment: Any
) -> None:
    make_experiment(owner, policies=("fifo", "sjf"))
    assert api.get("/api/v1/runs/?policy=sjf").json()["count"] == 1
    assert api.get("/api/v1/runs/?policy=nope").json()["count"] == 0
    assert api.get("/api/v1/runs/?seed=x").status_code == 400
    assert api.get("/api/v1/runs/?page_size=1&ordering=-id").json()["count"] == 2


# -- pagination -------------------------------------------------------------------------------


def _counts(ctx: Any) -> int:
    return sum("COUNT(" in q.upper() for q in _sql(ctx))


def test_a_short_page_needs_no_count_query(api: Any, owner: Any, make_cluster: Any) -> None:
    for i in range(5):
        make_cluster(owner, name=f"c{i}")
    cases = [
        ("/api/v1/clusters/", 5, 5, False, False),
        ("/api/v1/clusters/?page_size=2", 5, 2, True, True),  # full page with a successor
        ("/api/v1/clusters/?page_size=2&page=2", 5, 2, True, True),
        ("/api/v1/clusters/?page_size=2&page=3", 5, 1, False, False),  # the short last page
        ("/api/v1/clusters/?page_size=5", 5, 5, False, False),  # exactly full, nothing after
        ("/api/v1/clusters/?page_size=2&page=last", 5, 1, False, True),
        ("/api/v1/clusters/?name=nothing", 0, 0, False, False),
    ]
    for url, count, n, has_next, counted in cases:
        with CaptureQueriesContext(connection) as ctx:
            body = api.get(url).json()
        assert (body["count"], len(body["results"]), bool(body["next"])) == (
            count,
            n,
            has_next,
        ), url
        assert _counts(ctx) == int(counted), url
    assert api.get("/api/v1/clusters/?page_size=2&page=4").status_code == 404
    assert api.get("/api/v1/clusters/?page=0").status_code == 404
    assert api.get("/api/v1/clusters/?page=x").status_code == 404


# -- queries a request ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "queries"),
    [
        ("/api/v1/runs/", 2),  # token, page
        ("/api/v1/experiments/", 3),  # token, page with run counts, clusters + workloads
        ("/api/v1/clusters/", 2),
        ("/api/v1/workloads/", 2),
        ("/api/v1/runs/{run}/", 2),
        ("/api/v1/experiments/{exp}/", 3),
    ],
)
def test_the_benchmarked_endpoints_use_few_queries(
    api: Any,
    owner: Any,
    make_experiment: Any,
    django_assert_num_queries: Any,
    url: str,
    queries: int,
) -> None:
    exps = [
        make_experiment(owner, policies=("fifo", "sjf"), seeds=(0, 1), placement="random")
        for _ in range(3)
    ]
    url = url.format(run=exps[0].runs.first().pk, exp=exps[0].pk)
    with django_assert_num_queries(queries):
        assert api.get(url).status_code == 200


# -- the token cache ----------------------------------------------------------------------------


@pytest.fixture
def token_cache() -> Any:
    authentication.forget()
    with override_settings(CLUSTERSIM_TOKEN_CACHE_S=5.0):
        yield
    authentication.forget()


def _token_queries(api: Any, url: str = "/api/v1/clusters/") -> tuple[int, int]:
    with CaptureQueriesContext(connection) as ctx:
        status = api.get(url).status_code
    return status, sum("authtoken_token" in q for q in _sql(ctx))


def test_a_valid_token_is_looked_up_once_per_ttl(
    api: Any, owner: Any, token_cache: Any, monkeypatch: Any
) -> None:
    assert _token_queries(api) == (200, 1)
    assert _token_queries(api) == (200, 0)
    now = authentication.time.monotonic()
    monkeypatch.setattr(authentication.time, "monotonic", lambda: now + 5.1)
    assert _token_queries(api) == (200, 1)


def test_a_deleted_token_or_deactivated_user_is_refused_at_once(
    api: Any, owner: Any, token_cache: Any
) -> None:
    assert _token_queries(api) == (200, 1)
    owner.is_active = False
    owner.save()
    assert api.get("/api/v1/clusters/").status_code == 401
    owner.is_active = True
    owner.save()
    assert _token_queries(api) == (200, 1)
    Token.objects.filter(user=owner).delete()
    assert api.get("/api/v1/clusters/").status_code == 401


def test_a_change_the_process_did_not_see_lasts_at_most_the_ttl(
    api: Any, owner: Any, token_cache: Any, monkeypatch: Any
) -> None:
    assert _token_queries(api) == (200, 1)
    # as if another process deleted the token: no signal here
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM authtoken_token WHERE user_id = %s", [owner.pk])
    assert api.get("/api/v1/clusters/").status_code == 200
    now = authentication.time.monotonic()
    monkeypatch.setattr(authentication.time, "monotonic", lambda: now + 5.1)
    assert api.get("/api/v1/clusters/").status_code == 401


def test_wrong_tokens_are_not_cached(
    anon_api: Any, owner: Any, token_cache: Any, other_api: Any
) -> None:
    anon_api.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    for _ in range(2):
        assert _token_queries(anon_api) == (401, 1)
    assert authentication._cache == {}
    # two users, two entries; each request gets its own copy of its user
    assert other_api.get("/api/v1/clusters/").status_code == 200
    assert len(authentication._cache) == 1


def test_each_request_gets_its_own_user(owner: Any, token_cache: Any) -> None:
    token, _ = Token.objects.get_or_create(user=owner)
    auth = authentication.CachedTokenAuthentication()
    user1, tok1 = auth.authenticate_credentials(token.key)
    user2, tok2 = auth.authenticate_credentials(token.key)  # from the cache
    assert user1.pk == user2.pk == owner.pk and user1 is not user2
    assert tok2.user is user2 and tok1.user is user1
    user2.scratch = "mine"
    user3, _ = auth.authenticate_credentials(token.key)
    assert not hasattr(user3, "scratch")

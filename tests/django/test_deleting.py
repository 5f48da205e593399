"""Deleting clusters, workloads, experiments and runs: services, API (409 with the reason,
404 for others' objects) and the dashboard's confirmation pages. Stored results go with
them: no artefact row is left behind."""

from __future__ import annotations

from typing import Any

import pytest

from planner import services
from planner.models import Artefact, Cluster, Experiment, Run, RunState, Workload

pytestmark = pytest.mark.django_db


def _artefacts_of(runs: Any) -> list[int]:
    ids = []
    for row in runs.values_list("per_job_id", "timeseries_id", "stints_id"):
        ids += [i for i in row if i is not None]
    return ids


# -- services --------------------------------------------------------------------------------


def test_deleting_an_experiment_deletes_its_runs_and_their_artefacts(experiment: Any) -> None:
    ids = _artefacts_of(experiment.runs.all())
    assert len(ids) == 8 * 3  # per-job table, time series and stints of each of 8 runs
    kept = Artefact.objects.exclude(pk__in=ids).count()  # the workload's upload and jobs
    services.delete_experiment(experiment)
    assert not Experiment.objects.filter(pk=experiment.pk).exists()
    assert Run.objects.count() == 0
    assert Artefact.objects.filter(pk__in=ids).count() == 0
    assert Artefact.objects.count() == kept == 2
    assert Cluster.objects.count() == 1 and Workload.objects.count() == 1


def test_an_experiment_with_queued_runs_is_not_deleted(owner: Any, make_experiment: Any) -> None:
    exp = make_experiment(owner)
    with pytest.raises(services.InUse) as err:
        services.delete_experiment(exp)
    assert "1 queued or running run: cancel it first" in err.value.messages[0]
    assert Run.objects.filter(experiment=exp, state=RunState.QUEUED).count() == 1


def test_deleting_a_run_deletes_its_artefacts_and_counts_one_run_less(experiment: Any) -> None:
    run = experiment.runs.first()
    ids = _artefacts_of(experiment.runs.filter(pk=run.pk))
    services.delete_run(run)
    experiment.refresh_from_db()
    assert (experiment.runs.count(), experiment.runs_total) == (7, 7)
    assert experiment.state == Experiment.State.SUCCEEDED
    assert Artefact.objects.filter(pk__in=ids).count() == 0


def test_deleting_the_failed_run_leaves_a_succeeded_experiment(
    owner: Any, make_experiment: Any, finish: Any
) -> None:
    from planner import runner

    exp = finish(make_experiment(owner, load_factors=(1.0, 2.0)))
    bad = exp.runs.last()
    Run.objects.filter(pk=bad.pk).update(state=RunState.FAILED, error="boom")
    Experiment.objects.filter(pk=exp.pk).update(state=Experiment.State.RUNNING)
    runner.refresh_experiment(exp.pk)
    exp.refresh_from_db()
    assert exp.state == Experiment.State.FAILED
    services.delete_run(Run.objects.get(pk=bad.pk))
    exp.refresh_from_db()
    assert (exp.state, exp.runs_total) == (Experiment.State.SUCCEEDED, 1)


def test_a_queued_run_or_the_only_run_is_not_deleted(
    owner: Any, make_experiment: Any, finished_run: Any
) -> None:
    queued = make_experiment(owner, load_factors=(1.0, 2.0)).runs.first()
    with pytest.raises(services.InUse) as err:
        services.delete_run(queued)
    assert "is queued: cancel it first" in err.value.messages[0]
    with pytest.raises(services.InUse) as err:
        services.delete_run(finished_run)
    assert "the only run of experiment" in err.value.messages[0]
    assert Run.objects.filter(pk__in=[queued.pk, finished_run.pk]).count() == 2


def test_a_cluster_used_by_a_queued_experiment_is_refused_even_with_cascade(
    owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, name="busy")
    c = exp.clusters.get()
    with pytest.raises(services.InUse) as err:
        services.delete_cluster(c, cascade=True)
    assert err.value.experiments == [exp.pk]
    assert f"'busy' (#{exp.pk})" in err.value.messages[0]
    assert "queued or running" in err.value.messages[0]
    assert Cluster.objects.filter(pk=c.pk).exists()


def test_a_cluster_with_results_goes_only_with_its_experiments(
    owner: Any, make_cluster: Any, make_experiment: Any, finish: Any
) -> None:
    c, keep = make_cluster(owner, "c"), make_cluster(owner, "kept")
    both = finish(make_experiment(owner, cluster=c, name="both"))
    both.clusters.add(keep)  # an experiment of two clusters
    other = finish(make_experiment(owner, cluster=keep, name="other"))
    ids = _artefacts_of(both.runs.all())
    with pytest.raises(services.InUse) as err:
        services.delete_cluster(c)
    assert err.value.experiments == [both.pk] and "(cascade)" in err.value.messages[0]
    assert services.delete_cluster(c, cascade=True) == [both.pk]
    assert not Cluster.objects.filter(pk=c.pk).exists()
    assert not Experiment.objects.filter(pk=both.pk).exists()
    assert Artefact.objects.filter(pk__in=ids).count() == 0
    assert Experiment.objects.filter(pk=other.pk).exists()
    assert Cluster.objects.filter(pk=keep.pk).exists()


def test_an_unused_cluster_is_deleted(owner: Any, make_cluster: Any) -> None:
    c = make_cluster(owner)
    assert services.delete_cluster(c) == []
    assert Cluster.objects.count() == 0


def test_deleting_a_workload_deletes_its_upload_and_job_table(
    owner: Any, make_workload: Any
) -> None:
    w = make_workload(owner)
    ids = [w.source_id, w.jobs_id]
    assert None not in ids
    services.delete_workload(w)
    assert Workload.objects.count() == 0
    assert Artefact.objects.count() == 0


def test_a_workload_used_by_a_finished_experiment_needs_cascade(finished_run: Any) -> None:
    w = finished_run.workload
    with pytest.raises(services.InUse):
        services.delete_workload(w)
    services.delete_workload(w, cascade=True)
    assert (Workload.objects.count(), Experiment.objects.count(), Artefact.objects.count()) == (
        0,
        0,
        0,
    )


# -- API -------------------------------------------------------------------------------------


def test_deleting_an_experiment_with_active_runs_is_a_409(
    api: Any, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner)
    r = api.delete(f"/api/v1/experiments/{exp.pk}/")
    assert r.status_code == 409
    assert r.json()["experiments"] == [exp.pk] and "cancel it first" in r.json()["detail"]
    assert exp.runs.get().state == RunState.QUEUED  # not cancelled behind the user's back
    assert api.post(f"/api/v1/experiments/{exp.pk}/cancel/").status_code == 200
    assert api.delete(f"/api/v1/experiments/{exp.pk}/").status_code == 204
    assert Experiment.objects.count() == 0


def test_deleting_a_finished_experiment_over_the_api_leaves_no_artefact(
    api: Any, experiment: Any
) -> None:
    ids = _artefacts_of(experiment.runs.all())
    assert api.delete(f"/api/v1/experiments/{experiment.pk}/").status_code == 204
    assert Artefact.objects.filter(pk__in=ids).count() == 0


def test_deleting_a_run_over_the_api(api: Any, experiment: Any) -> None:
    run = experiment.runs.first()
    ids = _artefacts_of(experiment.runs.filter(pk=run.pk))
    assert api.delete(f"/api/v1/runs/{run.pk}/").status_code == 204
    assert api.get(f"/api/v1/runs/{run.pk}/").status_code == 404
    assert Artefact.objects.filter(pk__in=ids).count() == 0
    assert api.get(f"/api/v1/experiments/{experiment.pk}/").json()["runs_total"] == 7


def test_deleting_a_queued_run_over_the_api_is_a_409(
    api: Any, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner, load_factors=(1.0, 2.0))
    run = exp.runs.first()
    r = api.delete(f"/api/v1/runs/{run.pk}/")
    assert r.status_code == 409 and "cancel it first" in r.json()["detail"]
    assert Run.objects.filter(pk=run.pk).exists()


def test_deleting_a_used_cluster_over_the_api_needs_cascade(api: Any, finished_run: Any) -> None:
    c, exp = finished_run.cluster_id, finished_run.experiment_id
    r = api.delete(f"/api/v1/clusters/{c}/")
    assert r.status_code == 409 and r.json()["experiments"] == [exp]
    assert api.delete(f"/api/v1/clusters/{c}/?cascade=maybe").status_code == 400
    assert api.delete(f"/api/v1/clusters/{c}/?cascade=true").status_code == 204
    assert not Cluster.objects.filter(pk=c).exists()
    assert not Experiment.objects.filter(pk=exp).exists()


def test_deleting_a_used_workload_over_the_api_needs_cascade(api: Any, finished_run: Any) -> None:
    w = finished_run.workload_id
    assert api.delete(f"/api/v1/workloads/{w}/").status_code == 409
    assert api.delete(f"/api/v1/workloads/{w}/?cascade=true").status_code == 204
    assert Artefact.objects.count() == 0


@pytest.mark.parametrize("kind", ["clusters", "workloads", "experiments", "runs"])
def test_nobody_deletes_another_users_objects(
    other_api: Any, other_web: Any, experiment: Any, kind: str
) -> None:
    run = experiment.runs.first()
    pk = {
        "clusters": run.cluster_id,
        "workloads": run.workload_id,
        "experiments": experiment.pk,
        "runs": run.pk,
    }[kind]
    before = (Artefact.objects.count(), Run.objects.count())
    assert other_api.delete(f"/api/v1/{kind}/{pk}/?cascade=true").status_code == 404
    assert other_web.get(f"/{kind}/{pk}/delete/").status_code == 404
    assert other_web.post(f"/{kind}/{pk}/delete/", {"cascade": "on"}).status_code == 404
    assert (Artefact.objects.count(), Run.objects.count()) == before


# -- dashboard -------------------------------------------------------------------------------


def test_a_cluster_is_deleted_after_its_confirmation_page(
    web: Any, owner: Any, make_cluster: Any
) -> None:
    c = make_cluster(owner, "spare")
    page = web.get(f"/clusters/{c.pk}/delete/").content.decode()
    assert "Delete cluster “spare”?" in page and 'type="submit"' in page
    r = web.post(f"/clusters/{c.pk}/delete/")
    assert r.status_code == 302 and r["Location"] == "/"
    assert not Cluster.objects.filter(pk=c.pk).exists()
    assert "Deleted cluster &#x27;spare&#x27;" in web.get("/").content.decode()


def test_the_page_lists_the_experiments_a_cluster_goes_with(web: Any, finished_run: Any) -> None:
    c, exp = finished_run.cluster, finished_run.experiment
    page = web.get(f"/clusters/{c.pk}/delete/").content.decode()
    assert f'href="/experiments/{exp.pk}/"' in page and 'name="cascade"' in page
    r = web.post(f"/clusters/{c.pk}/delete/")  # the box left unticked
    assert r.status_code == 409 and "(cascade)" in r.content.decode()
    assert Cluster.objects.filter(pk=c.pk).exists()
    r = web.post(f"/clusters/{c.pk}/delete/", {"cascade": "on"})
    assert r.status_code == 302
    assert not Cluster.objects.filter(pk=c.pk).exists()
    assert not Experiment.objects.filter(pk=exp.pk).exists()


def test_an_active_experiment_is_refused_with_the_reason_and_a_cancel_button(
    web: Any, owner: Any, make_experiment: Any
) -> None:
    exp = make_experiment(owner)
    page = web.get(f"/experiments/{exp.pk}/delete/").content.decode()
    assert "cancel it first" in page
    assert f'action="/experiments/{exp.pk}/cancel/"' in page
    assert 'class="danger"' not in page  # no delete button
    r = web.post(f"/experiments/{exp.pk}/delete/")
    assert r.status_code == 409 and Experiment.objects.filter(pk=exp.pk).exists()
    cluster_page = web.get(f"/clusters/{exp.clusters.get().pk}/delete/").content.decode()
    assert "queued or running" in cluster_page and 'class="danger"' not in cluster_page


def test_an_experiment_and_a_run_are_deleted_from_their_pages(web: Any, experiment: Any) -> None:
    run = experiment.runs.first()
    assert f'href="/runs/{run.pk}/delete/"' in web.get(f"/runs/{run.pk}/").content.decode()
    r = web.post(f"/runs/{run.pk}/delete/")
    assert r.status_code == 302 and r["Location"] == f"/experiments/{experiment.pk}/"
    assert not Run.objects.filter(pk=run.pk).exists()
    page = web.get(f"/experiments/{experiment.pk}/").content.decode()
    assert f'href="/experiments/{experiment.pk}/delete/"' in page
    r = web.post(f"/experiments/{experiment.pk}/delete/")
    assert r.status_code == 302 and not Experiment.objects.exists()
    assert Artefact.objects.count() == 2  # the workload's upload and job table only


def test_a_running_run_offers_cancel_first(web: Any, owner: Any, make_experiment: Any) -> None:
    run = make_experiment(owner, load_factors=(1.0, 2.0)).runs.first()
    page = web.get(f"/runs/{run.pk}/delete/").content.decode()
    assert "cancel it first" in page and f'action="/runs/{run.pk}/cancel/"' in page
    r = web.post(f"/runs/{run.pk}/cancel/")
    assert r.status_code == 302
    assert Run.objects.get(pk=run.pk).state == RunState.CANCELLED
    assert web.post(f"/runs/{run.pk}/delete/").status_code == 302
    assert not Run.objects.filter(pk=run.pk).exists()


def test_a_workload_is_deleted_from_its_page(web: Any, owner: Any, make_workload: Any) -> None:
    w = make_workload(owner)
    assert f'href="/workloads/{w.pk}/delete/"' in web.get(f"/workloads/{w.pk}/").content.decode()
    assert web.post(f"/workloads/{w.pk}/delete/").status_code == 302
    assert (Workload.objects.count(), Artefact.objects.count()) == (0, 0)

"""Editing in a real browser: the cluster editor's "Add a row" (static/dashboard/formset.js),
a what-if variant, the comparison it leads to, and a deletion after its confirmation page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from planner.models import Cluster
from tests.browser.conftest import Console
from tests.browser.test_dashboard_browser import charts_drawn, shot, sign_in
from tests.django.conftest import SMALL_SPEC

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.mark.django_db(transaction=True)
def test_a_planner_edits_a_cluster_and_compares_a_what_if(
    page: tuple[Any, Console], live_server: Any, django_user_model: Any, screenshots: Path
) -> None:
    from planner import services

    pg, console = page
    base = live_server.url
    sign_in(pg, base, django_user_model, "editor")
    c = services.create_cluster(
        django_user_model.objects.get(username="editor"), "small", SMALL_SPEC
    )

    # the editor: two pools and one blank row; "Add a row" adds a fourth
    pg.goto(f"{base}/clusters/{c.pk}/edit/")
    pg.click("button[data-add-row=pools]")
    assert pg.input_value("#id_pools-TOTAL_FORMS") == "4"
    pg.fill("#id_pools-3-accelerator", "L4")
    pg.fill("#id_pools-3-nodes", "2")
    pg.fill("#id_pools-3-devices_per_node", "4")
    pg.click("button[name=save]")
    pg.wait_for_url(f"{base}/clusters/{c.pk}/")
    c.refresh_from_db()
    assert c.spec["pools"][-1] == {"accelerator": "L4", "nodes": 2, "devices_per_node": 4}
    assert c.total_devices == 16 + 8
    charts_drawn(pg)

    # a what-if in one step, then the comparison it offers
    pg.click("#what-if > summary")
    pg.fill("#id_add_pool-accelerator", "H100-SXM5")
    pg.fill("#id_add_pool-devices", "64")
    pg.click("#what-if-add_pool button[type=submit]")
    pg.wait_for_function(f"location.pathname !== '/clusters/{c.pk}/'")
    variant = Cluster.objects.get(parent=c)
    assert pg.inner_text("h1") == "small + 64 H100-SXM5-80GB" == variant.name
    charts_drawn(pg)
    shot(pg, screenshots, "21-what-if-variant")
    pg.click("#compare")
    pg.wait_for_url(f"{base}/experiments/new/**")
    checked = pg.eval_on_selector_all(
        "input[name=clusters]:checked", "els => els.map(e => Number(e.value))"
    )
    assert sorted(checked) == sorted([c.pk, variant.pk])

    # delete the variant after its confirmation page
    pg.goto(f"{base}/clusters/{variant.pk}/delete/")
    pg.click("main button.danger")
    pg.wait_for_url(f"{base}/")
    assert not Cluster.objects.filter(pk=variant.pk).exists()
    pg.goto(f"{base}/clusters/{c.pk}/edit/")  # (a full-page screenshot, then no more clicks)
    shot(pg, screenshots, "22-cluster-editor")

    assert console.errors == [], console.errors
    assert console.foreign == [], f"requests left the server: {console.foreign}"

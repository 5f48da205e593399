"""What the user reads when something is wrong: plain words (no Python class names or
signatures), each error under the field it concerns and said once, whole-file errors without
a "Line 0", an empty upload answered in the page."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from planner import parsing, services
from planner.models import Workload

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def field_errors(page: str, field: str) -> list[str]:
    """The messages Django shows under ``field`` (its ``errorlist``)."""
    m = re.search(rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>', page, re.S)
    return [html.unescape(x) for x in re.findall(r"<li>(.*?)</li>", m.group(1))] if m else []


def form_errors(page: str) -> list[str]:
    """The messages shown above the form (whole-form problems)."""
    m = re.search(r'<ul class="errorlist nonfield">(.*?)</ul>', page, re.S)
    return [html.unescape(x) for x in re.findall(r"<li>(.*?)</li>", m.group(1))] if m else []


# -- workloads that fail to parse -----------------------------------------------------------------


def _failed_upload(owner: Any, path: Path) -> Workload:
    w = services.create_workload(
        owner, name=path.name, filename=path.name, raw=path.read_bytes(), enqueue=False
    )
    assert parsing.parse_workload(w.pk) == "failed"
    w.refresh_from_db()
    return w


@pytest.mark.parametrize(
    ("fixture", "says"),
    [
        ("traces/empty.csv", "empty file"),
        ("inventory/kubectl_nodes.json", "unrecognised trace format"),  # not a trace at all
    ],
)
def test_a_whole_file_error_is_shown_once_without_a_line_number(
    web: Client, owner: Any, fixture: str, says: str
) -> None:
    w = _failed_upload(owner, FIXTURES / fixture)
    page = web.get(f"/workloads/{w.pk}/").content.decode()
    status = page.split('data-poll="', 1)[1]
    assert "Line 0" not in page and "line 0" not in page
    assert status.count(says) == 1, status[:2000]
    assert "Error" not in re.sub(r"<[^>]+>", "", status).replace("error", "")


def test_an_error_at_a_line_names_the_line_and_the_field_once(web: Client, owner: Any) -> None:
    w = _failed_upload(owner, FIXTURES / "traces/philly_bad_number.csv")
    assert w.report["error"]["line"] > 0, w.report
    line, field = w.report["error"]["line"], w.report["error"]["field"]
    page = web.get(f"/workloads/{w.pk}/").content.decode()
    assert page.count(f"Line {line}, field <code>{field}</code>: ") == 1
    assert html.unescape(page).count(w.report["error"]["message"]) == 1


# -- policy parameters ---------------------------------------------------------------------------


def test_an_unknown_policy_parameter_is_named_under_the_parameters_field(
    web: Client, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    data = {
        "name": "typo",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["fifo", "las"],
        "params": '{"fifo": {"nonsense": 1}, "las": {"quantum_s": 0}}',
        "load_factors": "1",
        "seeds": "0",
    }
    r = web.post("/experiments/new/", data)
    assert r.status_code == 200
    page = r.content.decode()
    assert field_errors(page, "params") == [
        "fifo takes no parameter 'nonsense'; it takes: backfill",
        "las.quantum_s: must be positive, got 0",
    ]
    assert form_errors(page) == []
    assert "__init__" not in page and "policies[" not in page


def test_parameters_of_a_policy_not_chosen_are_refused_under_the_field(
    web: Client, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    data = {
        "name": "stray",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["fifo"],
        "params": '{"las": {"quantum_s": 60}}',
        "load_factors": "1",
        "seeds": "0",
    }
    page = web.post("/experiments/new/", data).content.decode()
    assert field_errors(page, "params") == ["parameters for las, which you did not choose above"]


def test_a_compatibility_mode_refusing_a_policy_says_so_under_the_mode(
    web: Client, owner: Any, make_cluster: Any, make_workload: Any
) -> None:
    c, w = make_cluster(owner), make_workload(owner)
    data = {
        "name": "compat",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["srtf"],
        "load_factors": "1",
        "seeds": "0",
        "compat": "tiresias",
    }
    page = web.post("/experiments/new/", data).content.decode()
    (error,) = field_errors(page, "compat")
    assert error.startswith("compat tiresias does not cover policy 'srtf'")
    assert form_errors(page) == []


def test_a_grid_too_large_is_a_whole_form_error(
    web: Client, owner: Any, make_cluster: Any, make_workload: Any, settings: Any
) -> None:
    settings.CLUSTERSIM_MAX_RUNS_PER_EXPERIMENT = 3
    c, w = make_cluster(owner), make_workload(owner)
    data = {
        "name": "big",
        "clusters": [c.pk],
        "workloads": [w.pk],
        "policies": ["fifo", "las"],
        "load_factors": "1, 2",
        "seeds": "0",
    }
    page = web.post("/experiments/new/", data).content.decode()
    assert form_errors(page) == ["4 runs; at most 3 per experiment"]


# -- clusters ------------------------------------------------------------------------------------


def test_a_bad_spec_is_shown_under_the_spec(web: Client) -> None:
    spec = '{"pools": [{"accelerator": "Z9", "nodes": 1}]}'
    page = web.post("/clusters/new/", {"name": "x", "preset": "", "spec": spec}).content.decode()
    (error,) = field_errors(page, "spec")
    assert "Z9" in error
    assert form_errors(page) == []
    page = web.post("/clusters/new/", {"name": "x", "preset": "", "spec": "{no"}).content.decode()
    assert field_errors(page, "spec")[0].startswith("not valid JSON")


def test_a_node_list_that_cannot_be_read_is_shown_under_the_file(web: Client) -> None:
    bad = FIXTURES / "inventory/kubectl_truncated.json"
    upload = SimpleUploadedFile(bad.name, bad.read_bytes())
    page = web.post("/clusters/import/", {"file": upload, "format": ""}).content.decode()
    (error,) = field_errors(page, "file")
    assert bad.name in error
    assert form_errors(page) == []


# -- an empty upload -------------------------------------------------------------------------------


def test_an_empty_upload_is_answered_in_the_page(web: Client) -> None:
    empty = SimpleUploadedFile("empty.csv", b"")
    page = web.post("/workloads/upload/", {"file": empty}).content.decode()
    assert field_errors(page, "file") == ["The submitted file is empty."]
    # the progress script gets the same errors to show under the same field
    empty = SimpleUploadedFile("empty.csv", b"")
    r = web.post("/workloads/upload/", {"file": empty}, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert r.status_code == 400
    assert r.json() == {"errors": {"file": ["The submitted file is empty."]}}

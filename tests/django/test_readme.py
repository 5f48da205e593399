"""The README's examples, run as written, give meaningful answers.

The API block's ``curl`` lines are read from the README and sent, with the demo user's token,
to the app in this process after ``manage.py planner demo`` (so the ids are those of a fresh
``make run``); ``my_trace.csv`` and ``nodes.json``, the reader's own files, are the Gavel demo
trace and a kubectl node list. The command-line block's lines whose files ship with the
project are run too.
"""

from __future__ import annotations

import csv
import io
import re
import shlex
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from django.test import Client

from tests.django.conftest import GAVEL_TRACE, ROOT

README = ROOT / "README.md"
#: the reader's own files in the examples → files of the project standing in for them
STAND_INS = {
    "my_trace.csv": GAVEL_TRACE,
    "nodes.json": ROOT / "tests/fixtures/inventory/kubectl_nodes.json",
}


def sh_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", README.read_text(), re.S)


def commands(block: str) -> list[tuple[list[str], int | None]]:
    """The block's commands, split as a shell would (continued lines joined, quotes kept
    across lines, comments dropped), each with the status its trailing ``# 202`` names."""
    out: list[tuple[list[str], int | None]] = []
    text = ""
    for line in block.splitlines():
        if not text and (not line.strip() or line.lstrip().startswith("#")):
            continue
        text += line + "\n"
        try:
            words = [w for w in shlex.split(text, comments=True) if w != "\n"]
        except ValueError:  # a quote still open: the command goes on
            continue
        if text.rstrip().endswith("\\"):
            continue
        status = re.search(r"#\s*(\d{3})\b[^\n]*\n$", text)
        out.append((words, int(status.group(1)) if status else None))
        text = ""
    return out


def _api_block() -> str:
    (block,) = [b for b in sh_blocks() if "/api/v1/workloads/" in b and "curl" in b]
    return block


def curl(client: Client, token: str, words: list[str]) -> Any:
    """Send one ``curl`` command through the test client; the answer."""
    assert words[0] == "curl", words
    headers: dict[str, str] = {}
    form: dict[str, Any] = {}
    body: str | None = None
    method = ""
    url = ""
    it = iter(words[1:])
    for word in it:
        if word == "-s":
            continue
        if word == "-H":
            name, _, value = next(it).partition(": ")
            headers[name] = value.replace("$TOKEN", token)
        elif word == "-F":
            name, _, value = next(it).partition("=")
            if value.startswith("@"):
                form[name] = STAND_INS.get(value[1:], ROOT / value[1:]).open("rb")
            else:
                form[name] = value
        elif word == "-d":
            body = next(it)
        elif word == "-o":
            next(it)
        elif word == "-X":
            method = next(it)
        else:
            url = word
    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    if method == "DELETE":
        return client.delete(path, headers=headers)
    assert not method, method
    if form:
        return client.post(path, form, headers=headers)
    if body is not None:
        content_type = headers.pop("Content-Type")
        return client.post(path, body, content_type=content_type, headers=headers)
    return client.get(path, headers=headers)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_the_api_examples_answer_as_the_readme_says() -> None:
    import pandas as pd

    from planner.models import Cluster, Experiment, Workload

    call_command("planner", "demo", password="demo", stdout=io.StringIO())
    answers: dict[str, Any] = {}
    token = ""
    for words, status in commands(_api_block()):
        if words[0].startswith("TOKEN="):
            assert "manage.py planner token demo" in " ".join(words), words
            out = io.StringIO()
            call_command("planner", "token", "demo", stdout=out)
            token = out.getvalue().strip()
            continue
        if words[0] == "until":  # until curl ... | grep -q PATTERN; do sleep 1; done
            pipe = words.index("|")
            assert words[pipe + 1 : pipe + 3] == ["grep", "-q"], words
            r = curl(Client(), token, words[1:pipe])
            pattern = words[pipe + 3].removesuffix(";")
            assert pattern in r.content.decode(), (words, r.content[:300])
            continue
        r = curl(Client(), token, words)
        url = next(w for w in words if w.startswith("http"))
        assert r.status_code == (status or 200), (url, r.status_code, r.content[:500])
        answers[urlsplit(url).path + "?" + urlsplit(url).query] = r

    def answer(start: str) -> Any:
        (key,) = [k for k in answers if k.startswith(start)]
        return answers[key]

    assert {"compare", "presets", "policies", "formats"} <= set(answer("/api/v1/?").json())
    upload = Workload.objects.get(pk=answer("/api/v1/workloads/?").json()["id"])
    assert (upload.pk, upload.status, upload.summary["jobs"]) == (2, "ready", 100)
    exp = Experiment.objects.get(pk=answer("/api/v1/experiments/").json()["id"])
    assert exp.runs.count() == 6 and set(exp.runs.values_list("state", flat=True)) == {"succeeded"}
    assert exp.clusters.get().name.startswith("Demo: K80 + V100 + A100")
    synthetic = Workload.objects.get(pk=answer("/api/v1/workloads/synthetic/").json()["id"])
    assert (synthetic.status, synthetic.summary["jobs"]) == ("ready", 5000)
    derived = Workload.objects.get(pk=answer("/api/v1/workloads/1/derive/").json()["id"])
    assert derived.status == "ready", derived.error
    # the second day of the 2,406-job sample: more than a handful, fewer than all
    assert derived.report["jobs_read"] == 2406 and derived.report["jobs_kept"] == 595
    imported = Cluster.objects.get(pk=answer("/api/v1/clusters/import/").json()["id"])
    assert imported.total_devices > 0 and imported.import_report["unmapped"] == {}
    assert "L40" in imported.device_types
    variant = Cluster.objects.get(pk=answer("/api/v1/clusters/1/what-if/").json()["id"])
    philly = Cluster.objects.get(pk=1)
    assert (
        variant.total_devices == philly.total_devices + 64
        and "H100-SXM5-80GB" in variant.device_types
    )
    assert not Cluster.objects.filter(pk=3).exists()
    compared = answer("/api/v1/compare/").json()
    runs = compared["runs"]
    assert [(r["id"], r["policy"], r["load_factor"]) for r in runs] == [
        (2, "fifo", 1.0),
        (5, "tiresias", 1.0),
        (8, "gavel-las", 1.0),
    ]
    jct = compared["metrics"]["jct_mean_s"]
    assert all(v is not None and v > 0 for v in jct) and len(set(jct)) == 3  # they differ
    jobs = pd.read_parquet(io.BytesIO(answer("/api/v1/runs/5/jobs/").content))
    assert len(jobs) == 2406
    stints = list(csv.DictReader(io.StringIO(answer("/api/v1/runs/5/stints/").content.decode())))
    assert len(stints) >= 2406 and "node" in stints[0]
    table = list(csv.DictReader(io.StringIO(answer("/charts/experiments/1/").content.decode())))
    assert len(table) == 9  # three policies at three loads


def _cli_block() -> str:
    (block,) = [b for b in sh_blocks() if "-m clustersim run" in b]
    return block


def test_the_command_line_examples_with_shipped_files_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from clustersim.cli import main

    ran = 0
    for words, _ in commands(_cli_block()):
        assert words[:3] == [".venv/bin/python", "-m", "clustersim"], words
        args = words[3:]
        files = [a for a in args if re.search(r"\.(csv|json|trace|gz)$", a)]
        if not all((ROOT / f).is_file() for f in files):
            continue  # the reader's own files (my.trace, my_cluster.json, ...)
        assert main([str(ROOT / a) if a in files else a for a in args]) == 0, args
        out = capsys.readouterr().out
        assert len(out.splitlines()) >= 3, (args, out)
        ran += 1
    assert ran >= 4  # the demo run and the policies, presets and formats listings

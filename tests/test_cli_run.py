"""``python -m clustersim run``: JSON output, determinism across processes, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clustersim.cli import main
from tests.test_metrics import REQUIRED as KEYS

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "clustersim" / "data" / "demo"


def cli(*args: str, hashseed: str = "0") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    return subprocess.run(
        [sys.executable, "-m", "clustersim", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )


def test_json_has_every_metric_and_is_identical_in_two_processes(tmp_path: Path) -> None:
    args = [
        "run",
        "--preset",
        "gavel-testbed",
        "--trace",
        str(DEMO / "gavel_synth_multigpu_n100.trace"),
    ]
    args += ["--policy", "tiresias", "--placement", "random", "--seed", "7", "--json"]
    a = cli(*args, "--out", str(tmp_path / "a.csv"), hashseed="1")
    b = cli(*args, "--out", str(tmp_path / "b.csv"), hashseed="2")
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout  # byte-identical summary
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    out = json.loads(a.stdout)
    for key in KEYS:
        assert key in out, key
    assert out["jobs_total"] == 100 and out["jobs_completed"] == 100


def test_oversized_jobs_are_reported_as_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-01 00:00:00,60,1,60,a\n"
        "2017-10-01 00:01:00,60,64,3840,a\n"
    )
    assert main(["run", "--cluster", "p100:8", "--trace", str(trace), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["jobs_dropped"] == 1 and out["jobs_completed"] == 1


def test_jobs_no_device_can_hold_are_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ResNet-50 bs64 needs 8.04 GB per device, bs16 2.62 GB: an Orin Nano has 8 GB
    trace = tmp_path / "t.csv"
    trace.write_text(
        "job_id,submit_time,num_gpus,work,job_type\n"
        "a,0,1,100,ResNet-50 (batch size 64)\n"
        "b,0,1,100,ResNet-50 (batch size 16)\n"
    )
    args = ["run", "--cluster", "Jetson-Orin-Nano-8GB:2:1", "--trace", str(trace)]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["jobs_dropped"], out["jobs_fit_nowhere"], out["jobs_completed"]) == (1, 1, 1)
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "dropped: no device can hold them" in text and "ResNet-50" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cluster", "p100:8", "--trace", "no/such/file.csv"], "no/such/file.csv"),
        (["--cluster", "zz100:8", "--trace", "DEMO"], "zz100"),
        (["--cluster", "p100:8", "--trace", "DEMO", "--policy", "nope"], "unknown policy"),
        (["--cluster", "p100:8", "--trace", "DEMO", "--param", "x"], "key=value"),
        (
            ["--cluster", "p100:8", "--trace", "DEMO", "--param", "nonsense=1"],
            "fifo takes no parameter 'nonsense'; it takes: backfill",
        ),
        (
            ["--cluster", "p100:8", "--trace", "DEMO", "--policy", "sjf", "--param", "x=1"],
            "sjf takes no parameters (got 'x')",
        ),
        (
            ["--cluster", "p100:8", "--trace", "DEMO", "--policy", "srtf", "--compat", "tiresias"],
            "--compat tiresias does not cover policy 'srtf'",
        ),
        (
            [
                "--cluster",
                "p100:8",
                "--trace",
                "DEMO",
                "--compat",
                "tiresias",
                "--placement",
                "spread",
            ],
            "--compat tiresias has no placement 'spread' for policy 'fifo'",
        ),
        (
            ["--cluster", "p100:8", "--trace", "DEMO", "--gavel-compat", "--compat", "tiresias"],
            "conflicts with --compat tiresias",
        ),
        (["--cluster", "p100:8", "--trace", "DEMO", "--compat", "nope"], "unknown compatibility"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [str(DEMO / "philly_sample.csv") if a == "DEMO" else a for a in args]
    assert main(["run", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and message in err and "\n" not in err


def test_compat_gavel_and_its_old_spelling_are_one_mode(capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(DEMO / "gavel_synth_multigpu_n100.trace")
    base = ["run", "--cluster", "v100:8,p100:8,k80:8", "--trace", trace, "--policy", "gavel-las"]
    outs = []
    for flag in (["--compat", "gavel"], ["--gavel-compat"], []):
        assert main([*base, *flag, "--json"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0]["compat"] == outs[1]["compat"] == "gavel" and outs[2]["compat"] is None
    assert outs[0]["jct_mean_s"] == outs[1]["jct_mean_s"] != outs[2]["jct_mean_s"]


def test_compat_tiresias_on_its_own_spec_and_trace(
    shared_data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = shared_data / "traces" / "tiresias"
    args = ["run", "--cluster", str(d / "cluster_spec.csv"), "--trace", str(d / "60_job.csv")]
    for policy, placement in (("fifo", "yarn"), ("tiresias", "first-fit")):
        assert main([*args, "--policy", policy, "--compat", "tiresias", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert (out["placement"], out["devices"], out["preemptions"]) == (placement, 64, 0)
        assert out["jct_mean_s"] == pytest.approx(178.41666666666666, rel=1e-12)


def test_a_bad_spec_file_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "c.json"
    spec.write_text(json.dumps({"name": "x", "pools": [{"accelerator": "P100", "nodes": 0}]}))
    assert main(["run", "--cluster", str(spec), "--trace", str(DEMO / "philly_sample.csv")]) == 2
    assert "pools[0]" in capsys.readouterr().err


def test_policies_lists_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    for name in (
        "fifo",
        "sjf",
        "srtf",
        "las",
        "tiresias",
        "priority",
        "edf",
        "gavel-fifo",
        "gavel-las",
    ):
        assert f"{name} " in out


HEAVY = ("pandas", "pyarrow", "django", "plotly", "numba")


def imported_by(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``python -X importtime -m clustersim ...`` in a fresh process; the modules it
    imported, by name (``-X importtime`` reports each on stderr when first imported)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "clustersim", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and line.count("|") == 2
    }
    return done, names


@pytest.mark.parametrize("policy", ["fifo", "tiresias"])
@pytest.mark.parametrize("json_out", [False, True])
def test_a_small_run_imports_no_heavy_package(
    shared_data: Path, policy: str, json_out: bool
) -> None:
    """Start-up cost: a run on a small CSV trace needs numpy only (no pandas, pyarrow,
    Django, Plotly, nor numba: the kernels run as plain Python)."""
    trace = shared_data / "traces" / "tiresias" / "60_job.csv"
    args = ["run", "--cluster", "p100:64:4", "--trace", str(trace), "--policy", policy]
    done, names = imported_by(*args, *(["--json"] if json_out else []))
    assert done.returncode == 0, done.stderr[-2000:]
    assert {"numpy", "clustersim.engine", "clustersim.traces.tiresias"} <= names
    assert sorted(n for n in names if n.split(".")[0] in HEAVY) == []
    if json_out:
        assert json.loads(done.stdout)["jobs_completed"] == 60


def test_a_run_on_the_demo_gavel_trace_imports_no_heavy_package() -> None:
    trace = DEMO / "gavel_synth_multigpu_n100.trace"
    args = ["run", "--preset", "gavel-testbed", "--trace", str(trace), "--policy", "fifo"]
    done, names = imported_by(*args, "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["jobs_total"] == 100
    assert {"numpy", "clustersim.engine", "clustersim.traces.gavel"} <= names
    assert sorted(n for n in names if n.split(".")[0] in HEAVY) == []


def test_what_needs_a_heavy_package_still_gets_it(shared_data: Path, tmp_path: Path) -> None:
    """``--out x.parquet`` imports pandas and pyarrow; a run of many jobs compiles the
    kernels with numba."""
    trace = shared_data / "traces" / "tiresias" / "60_job.csv"
    out = tmp_path / "jobs.parquet"
    args = ["run", "--cluster", "p100:64:4", "--trace", str(trace), "--out", str(out)]
    done, names = imported_by(*args)
    assert done.returncode == 0, done.stderr[-2000:]
    assert {"pandas", "pyarrow"} <= names and "numba" not in names
    import pandas as pd

    assert len(pd.read_parquet(out)) == 60
    args = ["run", "--cluster", "p100:64:4", "--trace", str(DEMO / "philly_sample.csv")]
    done, names = imported_by(*args, "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["jobs_total"] >= 1000  # clustersim.kernels.COMPILE_FROM_JOBS
    assert "numba" in names


def test_json_reports_both_costs_the_horizon_and_both_waits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # one 1-GPU job on one V100 (Google Cloud $2.48/h; Epoch $11,500 over 4 years)
    trace = tmp_path / "t.csv"
    trace.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,3600,1,3600,a\n"
    )
    base = ["run", "--cluster", "v100:1", "--trace", str(trace), "--json"]
    assert main([*base, "--horizon-hours", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["horizon_s"] == 7200.0
    # the job's hour on the trace's GPU takes less on a V100; the cloud pays what it held
    assert 0 < out["busy_device_hours"] < 1
    assert out["cost_cloud_usd"] == pytest.approx(2.48 * out["busy_device_hours"])
    assert out["cost_owned_capital_usd"] == pytest.approx(11500 / (4 * 8760) * 2)
    assert out["cost_usd"] == out["cost_owned_usd"]
    assert out["cost_owned_usd"] > out["cost_owned_capital_usd"]  # plus the energy
    assert out["wait_mean_s"] == 0.0 and out["queue_delay_mean_s"] == 0.0
    assert main(base) == 0
    assert json.loads(capsys.readouterr().out)["horizon_s"] == 3600.0  # the 1 h floor


def test_the_table_labels_first_start_delay_and_both_costs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,60,1,60,a\n"
    )
    assert main(["run", "--cluster", "v100:1", "--trace", str(trace)]) == 0
    text = capsys.readouterr().out
    for label in ("first-start delay mean", "total wait mean", "cost, owned, over horizon"):
        assert label in text
    assert "cost, cloud, device-h held" in text
    assert "queueing delay mean" not in text


def test_a_bad_horizon_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-01 00:00:00,60,1,60,a\n"
    )
    code = main(["run", "--cluster", "v100:1", "--trace", str(trace), "--horizon-hours", "0"])
    assert code == 2
    assert "horizon" in capsys.readouterr().err

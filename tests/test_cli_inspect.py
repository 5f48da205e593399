"""``python -m clustersim inspect FILE [--format F] [--json]``."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from clustersim.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
REPORT_KEYS = {
    "format",
    "path",
    "jobs_read",
    "jobs_kept",
    "jobs_dropped",
    "drop_reasons",
    "warnings",
    "assumptions",
    "time_span_s",
    "start_time",
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["inspect", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_it_prints_the_report_as_one_json_object(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(FIXTURES / "philly_raw_small.json"), "--json")
    assert code == 0 and err == ""
    report = json.loads(out)
    assert set(report) == REPORT_KEYS
    assert report["format"] == "philly_raw"
    assert (report["jobs_read"], report["jobs_kept"], report["jobs_dropped"]) == (15, 7, 8)
    assert report["drop_reasons"]["no attempts"] == {"count": 1, "first_lines": [5]}
    assert out.count("\n") == 1


def test_it_prints_a_human_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(FIXTURES / "helios_small.csv"))
    assert code == 0
    assert out.splitlines()[0].endswith("helios_small.csv: helios")
    assert "jobs read      10" in out and "jobs kept      5" in out
    assert "50.0 min from 2020-04-01T00:00:00" in out
    assert "CPU-only job (gpu_num = 0) (line 4)" in out
    assert "warnings:" in out and "assumptions:" in out


def test_format_and_options_are_passed_to_the_reader(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        str(FIXTURES / "generic_jobs.csv"),
        "--format",
        "csv",
        "--option",
        "sep=;",
        "--option",
        'mapping={"job_id": "id", "submit_time": "arrival_h", "num_gpus": "gpus", '
        '"work": "runtime_min", "status": "state"}',
        "--option",
        'units={"submit_time": "h", "work": "min"}',
        "--option",
        'statuses=["ok"]',
        "--json",
    )
    assert code == 0
    report = json.loads(out)
    assert report["format"] == "csv" and report["jobs_kept"] == 2


def test_member_reads_a_file_inside_an_archive(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import zipfile

    path = tmp_path / "traces.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.write(FIXTURES / "helios_small.csv", "Venus/cluster_log.csv")
        zf.writestr("Venus/cluster_gpu_number.csv", "date,total\n")
    code, _, err = run(capsys, str(path))
    assert code == 2 and "choose one with member=" in err
    code, out, _ = run(capsys, str(path), "--member", "Venus/cluster_log.csv", "--json")
    assert code == 0 and json.loads(out)["format"] == "helios"


@pytest.mark.parametrize(
    ("name", "argv", "where"),
    [
        ("philly_raw_bad_type.json", [], ":3 [attempts]: expected a list"),
        ("philly_raw_bad_syntax.json", [], ":3: invalid JSON"),
        ("helios_bad_time.csv", ["--json"], ":3 [submit_time]: not a time"),
        ("philly_bad_number.csv", ["--format", "philly"], ":3 [duration]"),
    ],
)
def test_a_bad_file_exits_2_with_one_line_naming_the_line(
    capsys: pytest.CaptureFixture[str], name: str, argv: list[str], where: str
) -> None:
    path = FIXTURES / name
    code, out, err = run(capsys, str(path), *argv)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {path}{where}"), err
    assert err.count("\n") == 1


def test_unreadable_and_unknown_files_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, str(tmp_path / "missing.csv"))
    assert code == 2 and "cannot read file" in err
    garbage = tmp_path / "g.bin.gz"
    garbage.write_bytes(gzip.compress(b"\x00\x01\x02 not a trace"))
    code, _, err = run(capsys, str(garbage))
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1
    code, _, err = run(capsys, str(FIXTURES / "helios_small.csv"), "--format", "nope")
    assert code == 2 and "[format]: unknown format 'nope'" in err
    code, _, err = run(capsys, str(FIXTURES / "helios_small.csv"), "--option", "oops")
    assert code == 2 and "key=value" in err


def test_the_module_entry_point_runs_inspect() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "clustersim",
            "inspect",
            str(FIXTURES / "philly_raw_truncated.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().endswith("(the file ends inside this object: truncated?)")
    assert ":16: invalid JSON" in done.stderr

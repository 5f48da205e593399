"""The Alibaba PAI 2020 (job + task tables) and Alibaba GPU 2023 openb pod-list readers."""

from __future__ import annotations

import csv
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clustersim.errors import TraceError
from clustersim.jobtypes import reference_speed
from clustersim.traces import READERS, detect_format, read_trace
from clustersim.traces.alibaba_openb import NEVER_SCHEDULED, NOMINAL_DURATION_S, SHARING_DROPPED
from clustersim.traces.base import LineTally

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
JOBS = FIXTURES / "pai_job_small.csv"
TASKS = FIXTURES / "pai_task_small.csv"
OPENB = ["default", "gpuspec33", "multigpu50"]
FUZZ = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def openb_path(shared_data: Path, variant: str) -> Path:
    return shared_data / "traces" / "alibaba-gpu-2023" / f"openb_pod_list_{variant}.csv"


def write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(path: Path, format: str | None, **options: object) -> TraceError:
    with pytest.raises(TraceError) as info:
        read_trace(path, format=format, **options)
    return info.value


def by_id(jobs: object, job_id: str) -> int:
    return int(np.flatnonzero(jobs.job_id == job_id)[0])  # type: ignore[attr-defined]


# --- PAI 2020: the job table with its task table ---------------------------------------------


def test_pai_job_table_joined_with_its_tasks() -> None:
    jobs, report = read_trace(JOBS, task_table=TASKS)
    assert report.format == "alibaba-pai"
    assert (report.jobs_read, report.jobs_kept, report.jobs_dropped) == (10, 5, 5)
    assert report.drop_reasons == {
        "job_name repeats an earlier job row": LineTally(1, [10]),
        "no task in the task table": LineTally(1, [9]),
        "status not selected (option statuses)": LineTally(1, [4]),
        "end_time before start_time": LineTally(1, [7]),
        "CPU-only job (no task asks for a GPU)": LineTally(1, [5]),
    }
    assert list(jobs.job_id) == ["j1", "j2", "j3", "j6", "j8"]
    assert list(jobs.user) == ["u1", "u2", "u1", "u3", "u2"]
    # Submission from the job table, re-based to the earliest kept one (1000 s raw).
    assert list(jobs.submit_time) == [0.0, 100.0, 200.0, 390.0, 450.0]
    # Σ inst_num × plan_gpu / 100, rounded up: 2×100 %, 0.5 → 1, 4×100 %, 1, 2 tasks × 100 %.
    assert list(jobs.num_gpus) == [2, 1, 4, 1, 2]
    assert list(jobs.gpu_type) == ["V100-SXM2-16GB", "T4", "V100-SXM2-32GB", "MISC", ""]
    v100, t4, v100_32 = (reference_speed(n) for n in ("V100", "T4", "V100M32"))
    assert v100 and t4 and v100_32
    # Run time from the first task launch to the last task end, × the speed of the type.
    assert jobs.work == pytest.approx(
        [(2020 - 1005) * v100, 300 * t4, (5000 - 1300) * v100_32, 1000.0, 530.0]
    )
    assert list(jobs.cpu) == [16.0, 6.0, 32.0, 6.0, 12.0]
    assert list(jobs.mem_gb) == [50.0, 29.296875, 120.0, 10.0, 20.0]
    assert report.start_time is None


def test_pai_report_warns_about_running_mixed_and_unmapped_jobs() -> None:
    _, report = read_trace(JOBS, task_table=TASKS)
    text = "\n".join(report.warnings)
    assert "task rows of jobs not in the job table ignored: 1 row (line 12)" in text
    assert "Running without end_time" in text and "5000 s raw" in text and "(line 3)" in text
    assert "different gpu_type" in text and "(line 8)" in text
    assert "MISC 1" in text and "(line 6)" in text
    joined = "\n".join(report.assumptions)
    assert "Terminated 3, Failed 1, Running 1" in joined
    assert "1 for less than one" in joined
    assert "V100M32→V100-SXM2-32GB" in joined
    assert "raw time 1000 s" in joined and "UTC+8" in joined


def test_pai_task_table_alone() -> None:
    jobs, report = read_trace(TASKS)
    assert (report.jobs_read, report.jobs_kept) == (9, 6)  # jobs, not task rows
    assert report.drop_reasons == {
        "status not selected (option statuses)": LineTally(1, [5]),
        "end_time before start_time": LineTally(1, [9]),
        "CPU-only job (no task asks for a GPU)": LineTally(1, [7]),
    }
    assert list(jobs.job_id) == ["j1", "j2", "j3", "j6", "j8", "jx"]
    # Submit = first task launch (1005 s raw for j1), user unknown.
    assert list(jobs.submit_time) == [0.0, 195.0, 295.0, 395.0, 455.0, 2995.0]
    assert set(jobs.user) == {""}
    assert any("no job table" in a for a in report.assumptions)


def test_pai_task_table_with_the_job_table_option() -> None:
    jobs, report = read_trace(TASKS, format="alibaba-pai", job_table=JOBS)
    assert list(jobs.job_id) == ["j1", "j2", "j3", "j6", "j8", "jx"]
    assert list(jobs.submit_time) == [0.0, 100.0, 200.0, 390.0, 450.0, 3000.0]
    assert list(jobs.user) == ["u1", "u2", "u1", "u3", "u2", ""]
    assert any("no row in the job table" in w and "(line 12)" in w for w in report.warnings)


def test_pai_status_choice_and_unconstrained_types() -> None:
    jobs, report = read_trace(JOBS, task_table=TASKS, statuses=["Terminated"])
    assert list(jobs.job_id) == ["j1", "j6", "j8"]
    assert report.drop_reasons["status not selected (option statuses)"].count == 3
    jobs, _ = read_trace(JOBS, task_table=TASKS, gpu_constraint=False)
    assert set(jobs.gpu_type) == {""}
    assert jobs.work[0] == pytest.approx((2020 - 1005) * (reference_speed("V100") or 0))


def test_pai_accepts_the_header_line_of_the_header_files(tmp_path: Path, shared_data: Path) -> None:
    headers = shared_data / "traces" / "alibaba-pai-2020" / "headers"
    task = write(
        tmp_path, (headers / "pai_task_table.header").read_text() + TASKS.read_text(), "task.csv"
    )
    job = write(tmp_path, (headers / "pai_job_table.header").read_text() + JOBS.read_text())
    assert detect_format(task) == detect_format(job) == "alibaba-pai"
    jobs, report = read_trace(job, task_table=task)
    assert list(jobs.job_id) == ["j1", "j2", "j3", "j6", "j8"]
    assert report.drop_reasons["no task in the task table"].first_lines == [10]  # line moved


def test_pai_header_files_alone_are_not_traces(shared_data: Path) -> None:
    headers = shared_data / "traces" / "alibaba-pai-2020" / "headers"
    head = (headers / "pai_task_table.header").read_bytes()
    assert not READERS["alibaba-pai"].sniff(head, "pai_task_table.header")
    err = error_of(headers / "pai_task_table.header", "alibaba-pai")
    assert err.line == 0 and "no jobs" in err.message


def test_pai_job_table_needs_its_task_table() -> None:
    err = error_of(JOBS, "alibaba-pai")
    assert err.field == "task_table" and "task_table=" in err.message
    err = error_of(JOBS, "alibaba-pai", job_table=JOBS)
    assert err.field == "job_table"
    err = error_of(JOBS, "alibaba-pai", task_table=JOBS)  # a job table given as tasks
    assert err.path == str(JOBS) and err.line == 1
    err = error_of(TASKS, "alibaba-pai", task_table=TASKS)
    assert err.field == "task_table"
    err = error_of(JOBS, "alibaba-pai", task_table=FIXTURES / "nope.csv")
    assert "nope.csv" in err.path and "cannot read" in err.message


def test_pai_errors_name_the_line_and_field() -> None:
    err = error_of(FIXTURES / "pai_task_bad_number.csv", "alibaba-pai")
    assert (err.line, err.field) == (3, "plan_gpu") and "abc" in err.message
    err = error_of(FIXTURES / "pai_task_wrong_fields.csv", "alibaba-pai")
    assert (err.line, err.field) == (2, "gpu_type") and "expected 10" in err.message
    err = error_of(FIXTURES / "pai_task_bad_number.csv", "alibaba-pai", job_table=JOBS)
    assert err.path.endswith("pai_task_bad_number.csv") and err.line == 3


def test_pai_errors_in_the_second_table_name_that_file(tmp_path: Path) -> None:
    bad = write(tmp_path, TASKS.read_text().replace("1360", "13x60"), "tasks.csv")
    err = error_of(JOBS, "alibaba-pai", task_table=bad)
    assert (err.path, err.line, err.field) == (str(bad), 7, "start_time")


@pytest.mark.parametrize(
    ("line", "field"),
    [(",i1,u1,Terminated,1000,2030", "job_name"), ("j1,i1,u1,,1000,2030", "status")],
)
def test_pai_required_text_fields(tmp_path: Path, line: str, field: str) -> None:
    job = write(tmp_path, "j2,i2,u2,Failed,1100,1500\n" + line + "\n")
    err = error_of(job, "alibaba-pai", task_table=TASKS)
    assert (err.line, err.field) == (2, field)


def test_pai_rejects_bad_options(tmp_path: Path) -> None:
    assert error_of(TASKS, "alibaba-pai", statuses="Running").field == "statuses"
    assert error_of(TASKS, "alibaba-pai", gpu_constraint="no").field == "gpu_constraint"
    assert error_of(TASKS, "alibaba-pai", job_table=3).field == "job_table"
    assert "unknown option" in error_of(TASKS, "alibaba-pai", user="x").message


def test_pai_wrong_field_count_is_not_a_pai_table(tmp_path: Path) -> None:
    err = error_of(write(tmp_path, "a,b,c\n"), "alibaba-pai")
    assert err.line == 1 and "6" in err.message and "10" in err.message


# --- openb 2023 ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def openb_default(shared_data: Path) -> tuple:
    return read_trace(openb_path(shared_data, "default"))


@pytest.fixture(scope="module")
def openb_rows(shared_data: Path) -> dict[str, dict[str, str]]:
    with openb_path(shared_data, "gpuspec33").open() as f:
        return {r["name"]: r for r in csv.DictReader(f)}


@pytest.mark.parametrize("variant", OPENB)
def test_openb_real_lists_are_detected(shared_data: Path, variant: str) -> None:
    assert detect_format(openb_path(shared_data, variant)) == "alibaba-openb"


def test_openb_default_list(openb_default: tuple) -> None:
    jobs, report = openb_default
    # 8,152 pods: 1,088 CPU-only; of the GPU pods, 861 Pending ones were never scheduled
    # (openb-pod-7285, line 7287, among them: deleted when created) and never ran.
    assert (report.jobs_read, report.jobs_kept, report.jobs_dropped) == (8152, 6203, 1949)
    assert report.drop_reasons["CPU-only pod (num_gpu = 0)"].count == 1088
    assert report.drop_reasons[NEVER_SCHEDULED].count == 861
    assert len(report.drop_reasons) == 2
    assert jobs.submit_time[0] == 0.0 and report.time_span_s == 12_901_761.0
    assert set(jobs.gpu_type) == {""}
    text = "\n".join(report.warnings)
    assert "deletion_time at the trace end" in text and "32 rows" in text
    assert "alibaba/clusterdata#218" in text and "4117 rows" in text
    assert "never scheduled" not in text
    # 3,077 GPU-sharing pods less the 504 of them never scheduled
    assert "GPU-sharing pods" in text and "2573 rows" in text and "whole device" in text
    assert int((jobs.gpu_fraction < 1).sum()) == 2573


def test_openb_default_list_marks_exactly_the_sharing_pods(
    shared_data: Path, openb_default: tuple
) -> None:
    jobs, _ = openb_default
    with openb_path(shared_data, "default").open() as f:
        rows = {r["name"]: r for r in csv.DictReader(f)}
    assert all(rows[j]["scheduled_time"] != "" for j in jobs.job_id)
    milli = np.array([float(rows[j]["gpu_milli"]) for j in jobs.job_id])
    sharing = (jobs.num_gpus == 1) & (milli > 0) & (milli < 1000)
    np.testing.assert_array_equal(jobs.gpu_fraction, np.where(sharing, milli / 1000, 1.0))


def test_openb_spot_values(openb_default: tuple) -> None:
    jobs, _ = openb_default
    i = by_id(jobs, "openb-pod-0001")  # 6000,12288,1,460,,LS,Running,427061,12902960,427061
    assert jobs.submit_time[i] == 427061.0
    assert jobs.work[i] == 12902960.0 - 427061.0
    assert (jobs.num_gpus[i], jobs.priority[i], jobs.cpu[i], jobs.mem_gb[i]) == (1, 2, 6.0, 12.0)
    assert jobs.gpu_type[i] == "" and jobs.gpu_fraction[i] == 0.46


def test_openb_gpu_spec_constraints(shared_data: Path, openb_rows: dict) -> None:
    jobs, report = read_trace(openb_path(shared_data, "gpuspec33"))
    assert report.jobs_kept == 6203
    t4 = reference_speed("T4") or 0
    for i, name in enumerate(jobs.job_id[:400]):
        raw = openb_rows[name]
        spec = raw["gpu_spec"]
        run = float(raw["deletion_time"]) - float(raw["scheduled_time"])
        if spec == "T4":
            assert jobs.gpu_type[i] == "T4" and jobs.work[i] == pytest.approx(run * t4)
        elif spec == "V100M32":
            assert jobs.gpu_type[i] == "V100-SXM2-32GB"
        elif spec in ("G2", "G3"):
            assert jobs.gpu_type[i] == spec and jobs.work[i] == run
        elif "|" in spec and len(set(spec.split("|"))) > 1:
            assert jobs.gpu_type[i] == "" and jobs.work[i] == run
    assert any("G2 300, G3 77" in w for w in report.warnings)  # scheduled pods only
    jobs, _ = read_trace(openb_path(shared_data, "gpuspec33"), multi_spec="first")
    i = by_id(jobs, next(n for n, r in openb_rows.items() if r["gpu_spec"] == "V100M16|V100M32"))
    assert jobs.gpu_type[i] == "V100-SXM2-16GB"


def test_openb_five_column_variant(shared_data: Path) -> None:
    jobs, report = read_trace(openb_path(shared_data, "multigpu50"))
    assert (report.jobs_read, report.jobs_kept) == (9061, 7973)
    assert (jobs.submit_time == 0).all() and (jobs.work == NOMINAL_DURATION_S).all()
    assert any("nominal run time 655 s" in w for w in report.warnings)
    assert sorted(set(jobs.num_gpus)) == [1, 2, 4, 8]
    jobs, _ = read_trace(openb_path(shared_data, "multigpu50"), nominal_duration_s=60)
    assert (jobs.work == 60).all()


def test_openb_fixture() -> None:
    jobs, report = read_trace(FIXTURES / "openb_small.csv")
    assert report.jobs_read == 8  # the blank line does not count
    # pod-e (line 6, Pending, no scheduled_time) never ran: dropped, not replayed as the
    # 300 s it waited before deletion
    assert report.drop_reasons == {
        "CPU-only pod (num_gpu = 0)": LineTally(1, [4]),
        NEVER_SCHEDULED: LineTally(1, [6]),
    }
    assert list(jobs.job_id) == ["pod-a", "pod-b", "pod-d", "pod-f", "pod-g", "pod-h"]
    assert list(jobs.gpu_type) == ["", "V100-SXM2-32GB", "", "T4", "", ""]
    assert list(jobs.priority) == [2, 0, 1, 2, 0, 2]
    v32, t4 = reference_speed("V100M32") or 0, reference_speed("T4") or 0
    # pod-h has no deletion_time: runs to the end (9000); pod-a and pod-f are Running with
    # deletion_time at the trace end.
    assert jobs.work == pytest.approx([9000, 950 * v32, 490, 8480 * t4, 50, 8200])
    # pod-b asks for 460 thousandths of a GPU: marked, still one whole device
    assert list(jobs.gpu_fraction) == [1.0, 0.46, 1.0, 1.0, 1.0, 1.0]
    assert list(jobs.num_gpus) == [1, 1, 8, 2, 1, 4]
    text = "\n".join(report.warnings)
    assert "GPU-sharing pods (0 < gpu_milli < 1000, 0.5 GPUs" in text and "1 row (line 3)" in text
    assert "unknown qos class" in text and "(line 8)" in text
    assert "no deletion_time" in text and "(line 10)" in text
    assert "G2" not in text


def test_openb_sharing_pods_can_be_dropped() -> None:
    jobs, report = read_trace(FIXTURES / "openb_small.csv", sharing="drop")
    assert list(jobs.job_id) == ["pod-a", "pod-d", "pod-f", "pod-g", "pod-h"]
    assert report.drop_reasons[SHARING_DROPPED] == LineTally(1, [3])
    assert (jobs.gpu_fraction == 1.0).all()
    assert not any("GPU-sharing" in w for w in report.warnings)


def test_openb_never_scheduled_pods_are_dropped_whatever_their_phase(tmp_path: Path) -> None:
    header = (FIXTURES / "openb_small.csv").read_text().splitlines()[0]
    text = (
        header
        + "\np1,1,1,1,1000,,LS,Succeeded,0,100,40"
        + "\np2,1,1,2,1000,,LS,Pending,10,500,"
        + "\np3,1,1,1,1000,,LS,Failed,20,90,\n"
    )
    jobs, report = read_trace(write(tmp_path, text))
    assert list(jobs.job_id) == ["p1"] and list(jobs.work) == [60.0]
    assert report.drop_reasons == {NEVER_SCHEDULED: LineTally(2, [3, 4])}


def test_openb_phase_choice() -> None:
    jobs, report = read_trace(FIXTURES / "openb_small.csv", phases=["Running"])
    assert list(jobs.job_id) == ["pod-a", "pod-f", "pod-h"]
    assert report.drop_reasons["pod_phase not selected (option phases)"].count == 4


def test_openb_drops_zero_length_pods(tmp_path: Path) -> None:
    header = (FIXTURES / "openb_small.csv").read_text().splitlines()[0]
    text = header + "\np1,1,1,1,1000,,LS,Running,0,10,0\np2,1,1,1,1000,,LS,Running,5,5,5\n"
    jobs, report = read_trace(write(tmp_path, text))
    assert list(jobs.job_id) == ["p1"]
    assert report.drop_reasons["deletion_time not after scheduled_time"] == LineTally(1, [3])


@pytest.mark.parametrize(
    ("name", "line", "field"),
    [("openb_bad_number.csv", 4, "creation_time"), ("openb_partial_times.csv", 1, "deletion_time")],
)
def test_openb_errors_name_the_line_and_field(name: str, line: int, field: str) -> None:
    err = error_of(FIXTURES / name, "alibaba-openb")
    assert (err.line, err.field) == (line, field)


def test_openb_rejects_bad_options() -> None:
    path = FIXTURES / "openb_small.csv"
    assert error_of(path, None, multi_spec="all").field == "multi_spec"
    assert error_of(path, None, phases="Running").field == "phases"
    assert error_of(path, None, nominal_duration_s=-1).field == "nominal_duration_s"
    assert error_of(path, None, sharing="split").field == "sharing"


def test_reports_are_json_compatible(shared_data: Path) -> None:
    cases: list[tuple[Path, dict[str, object]]] = [
        (openb_path(shared_data, "gpuspec33"), {}),
        (JOBS, {"task_table": TASKS}),
    ]
    for path, options in cases:
        _, report = read_trace(path, None, **options)
        json.dumps(report.to_dict(), allow_nan=False)


# --- detection does not steal other files ----------------------------------------------------


def test_alibaba_readers_claim_no_other_file(shared_data: Path) -> None:
    traces = shared_data / "traces"
    others = [
        p
        for p in traces.rglob("*")
        if p.is_file()
        and "openb_pod_list" not in p.name
        and p.suffix in (".csv", ".trace", ".header")
        and "headers" not in p.parts
    ]
    assert len(others) > 20
    for path in others:
        head = path.read_bytes()[:65536]
        for name in ("alibaba-pai", "alibaba-openb"):
            assert not READERS[name].sniff(head, path.name), (name, path)


# --- fuzz ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def outcome(path: Path, format: str, **options: object) -> TraceError | None:
    try:
        jobs, report = read_trace(path, format=format, **options)
    except TraceError as err:
        assert isinstance(err.line, int) and err.line >= 0
        assert isinstance(err.field, str) and err.message and err.path in str(err)
        return err
    assert len(jobs) == report.jobs_kept > 0
    assert report.jobs_read == report.jobs_kept + report.jobs_dropped
    assert sum(t.count for t in report.drop_reasons.values()) == report.jobs_dropped
    assert (jobs.work > 0).all() and np.isfinite(jobs.work).all() and (jobs.num_gpus >= 1).all()
    assert (jobs.submit_time >= 0).all()
    json.dumps(report.to_dict(), allow_nan=False)
    return None


def samples(shared_data: Path) -> dict[str, tuple[str, int, tuple[int, ...]]]:
    """Text, header lines and numeric field indexes of a sample of each format."""
    openb = openb_path(shared_data, "gpuspec33").read_text().splitlines()[:12]
    return {
        "alibaba-pai": (TASKS.read_text(), 0, (2, 4, 5, 6, 7, 8)),
        "alibaba-openb": ("\n".join(openb) + "\n", 1, (1, 2, 3, 4, 8, 9, 10)),
    }


MUTATION = st.lists(
    st.tuples(
        st.sampled_from(["delete", "insert", "replace", "truncate", "duplicate"]),
        st.floats(0, 1),
        st.floats(0, 1),
        st.binary(max_size=20),
    ),
    min_size=1,
    max_size=4,
)
VALUE = st.one_of(
    st.sampled_from(["1e400", "-1e400", "nan", "inf", "-1", "0", "0.5", "9" * 400, "", " 5"]),
    st.integers(-(10**30), 10**30).map(str),
    st.text(
        alphabet=st.characters(exclude_characters="\n\r,", exclude_categories=["Cs"]), max_size=12
    ),
)


def mutate(data: bytearray, ops: list) -> bytes:
    for op, a, b, blob in ops:
        i = int(a * len(data))
        j = min(len(data), i + int(b * 40))
        if op == "delete":
            del data[i:j]
        elif op == "insert":
            data[i:i] = blob
        elif op == "replace":
            data[i:j] = blob
        elif op == "truncate":
            data = data[:i]
        else:
            data[i:i] = data[i:j]
    return bytes(data)


@FUZZ
@given(kind=st.sampled_from(["alibaba-pai", "alibaba-openb"]), ops=MUTATION)
def test_mutated_files_fail_only_with_trace_errors(
    shared_data: Path, scratch: Path, kind: str, ops: list
) -> None:
    text = samples(shared_data)[kind][0]
    path = scratch / "fuzz.csv"
    path.write_bytes(mutate(bytearray(text.encode()), ops))
    outcome(path, kind)
    if kind == "alibaba-pai":  # the same damage in the job table, joined with good tasks
        jobs = scratch / "jobs.csv"
        jobs.write_bytes(mutate(bytearray(JOBS.read_bytes()), ops))
        outcome(jobs, kind, task_table=TASKS)
        outcome(TASKS, kind, job_table=jobs)


@FUZZ
@given(
    kind=st.sampled_from(["alibaba-pai", "alibaba-openb"]),
    row=st.integers(0, 9),
    which=st.integers(0, 20),
    value=VALUE,
)
def test_a_bad_field_is_reported_on_its_line(
    shared_data: Path, scratch: Path, kind: str, row: int, which: int, value: str
) -> None:
    text, header, numeric = samples(shared_data)[kind]
    lines = [x for x in text.splitlines() if x]
    k = header + row % (len(lines) - header)
    fields = lines[k].split(",")
    col = numeric[which % len(numeric)] if which < 14 else which % len(fields)
    fields[col] = value
    lines[k] = ",".join(fields)
    path = scratch / "field.csv"
    path.write_text("\n".join(lines) + "\n")
    err = outcome(path, kind)
    if err is not None:
        assert err.line == k + 1, str(err)
        assert err.field or "NUL" in err.message, str(err)


def _openb_rows(tmp_path: Path, rows: list[str], extra: str = "") -> Path:
    header = (FIXTURES / "openb_small.csv").read_text().splitlines()[0] + extra
    path = tmp_path / "pods.csv"
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def test_openb_malformed_fractional_requests_are_dropped_and_counted(tmp_path: Path) -> None:
    path = _openb_rows(
        tmp_path,
        [
            "p1,1000,1024,1,500,,LS,Running,0,100,0",  # a share: kept
            "p2,1000,1024,2,500,,LS,Running,0,100,0",  # half of each of two GPUs: malformed
            "p3,1000,1024,2,1500,,LS,Running,0,100,0",  # above 1000 milli
            "p4,1000,1024,1,-5,,LS,Running,0,100,0",  # negative
            "p5,1000,1024,2,1000,,LS,Running,0,100,0",  # two whole GPUs: kept
        ],
    )
    jobs, report = read_trace(path)
    assert list(jobs.job_id) == ["p1", "p5"]
    assert list(jobs.gpu_fraction) == [0.5, 1.0]
    assert report.drop_reasons == {
        "gpu_milli < 1000 with num_gpu > 1 (a share is of one GPU)": LineTally(1, [3]),
        "gpu_milli outside [0, 1000]": LineTally(2, [4, 5]),
    }


def test_openb_mig_slices_become_shares_and_unknown_profiles_are_dropped(
    tmp_path: Path,
) -> None:
    path = _openb_rows(
        tmp_path,
        [
            "m1,1000,1024,1,1000,A100,LS,Running,0,100,0,3g.20gb",  # A100-40GB offers it
            "m2,1000,1024,1,1000,H100,LS,Running,0,100,0,3g.20gb",  # H100 does not
            "m3,1000,1024,1,1000,V100M32,LS,Running,0,100,0,1g.5gb",  # V100: no MIG
            "m4,1000,1024,1,1000,,LS,Running,0,100,0,9g.99gb",  # no device has it
            "m5,1000,1024,2,1000,A100,LS,Running,0,100,0,1g.10gb",  # a slice of two GPUs
            "m6,1000,1024,1,1000,,LS,Running,0,100,0,1g.10gb",  # any device: A100-80GB has it
            "m7,1000,1024,1,1000,,LS,Running,0,100,0,",  # no slice: a whole GPU
        ],
        extra=",mig_profile",
    )
    jobs, report = read_trace(path)
    assert list(jobs.job_id) == ["m1", "m6", "m7"]
    # 3 of 7 compute slices -> round(3000 / 7) = 429 milli; 1 of 7 -> 143 milli
    assert list(jobs.gpu_fraction) == [0.429, 0.143, 1.0]
    assert report.drop_reasons["MIG profile not offered by the pod's GPU"] == LineTally(
        3, [3, 4, 5]
    )
    assert report.drop_reasons["MIG slice with num_gpu other than 1"] == LineTally(1, [6])

"""The fast paths of the delimited-text readers give exactly what the line-by-line paths give.

Plain files are read in one piece, well-formed files are split by pyarrow in one go (numbers
read as numbers where the reader allows it), times are converted by Arrow's ISO 8601 parser,
text is trimmed only when some value has surrounding whitespace, numeric ids are checked for
repeats without hashing, the tasks of a PAI job are grouped without hashing their names when
they are listed together (and joined to the job table without hashing when both tables list
the jobs in the same order), and the job table gets its columns already in submit order. Each
of these steps falls back to the exact, slower path when its shortcut does not apply. Small
plain files of some formats are read without pyarrow at all (``base.small_header_table``).
Here every file is read three ways (as it comes, with pyarrow only, and with pyarrow and
every shortcut switched off, by monkeypatching) and the tables, reports and errors must be
equal.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clustersim.traces.alibaba_openb as openb
import clustersim.traces.alibaba_pai as pai
import clustersim.traces.base as base
import clustersim.traces.gavel as gavel
import clustersim.traces.generic as generic
import clustersim.traces.tiresias as tiresias
from bench.parse import (  # the generators of the benchmark's large traces
    write_gaia_log,
    write_helios_log,
    write_openb_log,
    write_pai_tables,
    write_pollux_log,
    write_synergy_log,
    write_tiresias_log,
)
from clustersim.errors import TraceError
from clustersim.traces import READERS, read_trace

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "traces"
SHARED = ROOT.parent / "shared" / "data" / "traces"
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
#: Real files of the delimited formats, with their reader.
REAL = [
    ("philly/philly.csv", "philly"),
    ("gaia/pai-100k.csv", "gaia"),
    ("pollux/workload-1.csv", "pollux"),
    ("tiresias/60_job.csv", "tiresias"),
    ("tiresias/tf_job.csv", "tiresias"),
    ("synergy/static_100job_6_3_1100.0.csv", "synergy"),
    ("synergy/test_trace.csv", "synergy"),
    ("alibaba-gpu-2023/openb_pod_list_default.csv", "alibaba-openb"),
    ("alibaba-gpu-2023/openb_pod_list_gpuspec33.csv", "alibaba-openb"),
    ("alibaba-gpu-2023/openb_pod_list_multigpu50.csv", "alibaba-openb"),
    ("gavel/0e4a51.trace", "gavel"),
]
HELIOS_MAPPING = {"num_gpus": "gpu_num", "work": "duration", "status": "state", "cpu": "cpu_num"}


def _objects_only(columns: dict[str, Any]) -> dict[str, Any]:
    """``_submit_sorted`` without the sorting: pyarrow columns only become Python objects."""
    return {k: base.arrow_objects(v) if isinstance(v, pa.Array) else v for k, v in columns.items()}


def arrow_only(mp: pytest.MonkeyPatch) -> None:
    """Read every file with pyarrow, however small."""
    mp.setattr(base, "SMALL_BYTES", -1)


def slow_paths(mp: pytest.MonkeyPatch) -> None:
    """Switch every shortcut off."""
    arrow_only(mp)
    mp.setattr(base.DelimitedText, "_columns_plain", lambda self, *a, **k: None)
    mp.setattr(base, "_simple_line_count", lambda data: None)
    mp.setattr(base, "_iso_times", lambda values: None)
    mp.setattr(base, "_edges_plain", lambda values, allow_empty: False)
    mp.setattr(base, "int_ids", lambda values: None)
    mp.setattr(generic, "int_ids", lambda values: None)
    mp.setattr(base, "_submit_sorted", _objects_only)
    mp.setattr(base, "_read_plain", lambda path: None)
    mp.setattr(pai, "_run_codes", lambda values: None)
    mp.setattr(pai, "_same_names", lambda a, b: False)


def outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    """A read's table and report, or its error, in comparable form."""
    try:
        jobs, report = call()
    except TraceError as err:
        return ("error", err.line, err.field, err.message)
    columns = {k: v.tolist() for k, v in jobs.columns().items()}
    return ("ok", repr(columns), report.to_dict())  # repr: nan equals nan


def both_ways(path: Path, fmt: str | None = None, **options: Any) -> tuple[Any, ...]:
    """Read ``path`` as it comes (without pyarrow if it is small and plain), with pyarrow and
    its shortcuts, and without the shortcuts; they must agree. Returns the outcome."""
    fast = outcome(lambda: read_trace(path, fmt, **options))
    with pytest.MonkeyPatch.context() as mp:
        arrow_only(mp)
        arrow = outcome(lambda: read_trace(path, fmt, **options))
    with pytest.MonkeyPatch.context() as mp:
        slow_paths(mp)
        slow = outcome(lambda: read_trace(path, fmt, **options))
    assert fast == arrow, f"{path.name} ({fmt}): the paths with and without pyarrow differ"
    assert arrow == slow, f"{path.name} ({fmt}): fast and slow paths differ"
    return fast


@pytest.mark.parametrize(("name", "fmt"), REAL)
def test_real_files_read_the_same_both_ways(name: str, fmt: str) -> None:
    assert both_ways(SHARED / name, fmt)[0] == "ok"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Small files from the benchmark's generators, one per format."""
    out = tmp_path_factory.mktemp("generated")
    write_helios_log(out / "cluster_log.csv", 3000)
    write_pai_tables(out / "pai_task.csv", out / "pai_job.csv", 2000)
    write_openb_log(out / "openb.csv", 2000)
    write_tiresias_log(out / "tiresias.csv", 2000)
    write_synergy_log(out / "synergy.csv", 2000)
    write_gaia_log(out / "gaia.csv", 2000)
    write_pollux_log(out / "pollux.csv", 2000)
    return out


@pytest.mark.parametrize(
    ("name", "fmt", "options"),
    [
        ("cluster_log.csv", "helios", {}),
        ("cluster_log.csv", "csv", {"mapping": HELIOS_MAPPING}),
        ("pai_task.csv", "alibaba-pai", {}),
        ("pai_job.csv", "alibaba-pai", {"task_table": "pai_task.csv"}),
        ("openb.csv", "alibaba-openb", {}),
        ("tiresias.csv", "tiresias", {}),
        ("synergy.csv", "synergy", {}),
        ("gaia.csv", "gaia", {}),
        ("pollux.csv", "pollux", {}),
    ],
)
def test_generated_files_read_the_same_both_ways(
    generated: Path, name: str, fmt: str, options: dict[str, Any]
) -> None:
    options = {k: str(generated / v) if k == "task_table" else v for k, v in options.items()}
    assert both_ways(generated / name, fmt, **options)[0] == "ok"


def _variants(text: str) -> dict[str, str]:
    """``text`` with the kinds of damage the shortcuts must notice."""
    lines = text.split("\n")
    numbers = [i for i, line in enumerate(lines) if any(c.isdigit() for c in line)]
    row = numbers[len(numbers) // 2] if numbers else 0

    def at_row(line: str) -> str:
        return "\n".join([*lines[:row], line, *lines[row + 1 :]])

    fields = lines[row].split(",")
    first_digit = next((i for i, f in enumerate(fields) if f[:1].isdigit()), 0)

    def field(value: str) -> str:
        return at_row(",".join([*fields[:first_digit], value, *fields[first_digit + 1 :]]))

    return {
        "as is": text,
        "trailing blank lines": text.rstrip("\n") + "\n\n \n\t\n",
        "empty line": at_row(lines[row] + "\n"),
        "line of spaces": at_row(lines[row] + "\n   "),
        "spaces around a number": field(f" {fields[first_digit]} "),
        "nan": field("nan"),
        "empty number": field(""),
        "quoted number": field(f'"{fields[first_digit]}"'),
        "crlf": text.replace("\n", "\r\n"),
        "no final line end": text.rstrip("\n"),
        "leading blank line": "\n" + text,
    }


FIXTURE_FILES = sorted(
    p for p in FIXTURES.iterdir() if p.suffix in (".csv", ".trace") and p.stat().st_size < 4000
)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
def test_fixtures_and_damaged_copies_read_the_same_both_ways(tmp_path: Path, path: Path) -> None:
    text = path.read_text()
    for label, variant in _variants(text).items():
        copy = tmp_path / f"{label.replace(' ', '_')}{path.suffix}"
        copy.write_text(variant)
        for fmt in READERS:
            if fmt == "philly_raw":
                continue
            options: dict[str, Any] = {"mapping": HELIOS_MAPPING} if fmt == "csv" else {}
            both_ways(copy, fmt, **options)


def test_the_shortcuts_are_taken_on_well_formed_files(
    generated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken: list[dict[str, pa.Array]] = []
    plain = base.DelimitedText._columns_plain

    def spy(self: base.DelimitedText, *args: Any, **kwargs: Any) -> Any:
        out = plain(self, *args, **kwargs)
        if out is not None:
            taken.append(out)
        return out

    monkeypatch.setattr(base.DelimitedText, "_columns_plain", spy)
    read_trace(SHARED / "philly" / "philly.csv")  # ends in an empty line
    assert len(taken) == 1 and len(taken[0]["timestamp"]) == 82_247
    read_trace(generated / "gaia.csv", "gaia")
    assert base.is_numbers(taken[-1]["arrival_time"])
    read_trace(generated / "cluster_log.csv", "helios")
    assert base.is_numbers(taken[-1]["3"])  # gpu_num, by position
    assert not base.is_numbers(taken[-1]["7"])  # submit_time


DEMO = ROOT / "clustersim" / "data" / "demo"
#: Traces that ship with the package or the reference data, small enough for the path
#: without pyarrow, by reader: the first three layouts of Gavel and Tiresias.
SMALL = [
    (DEMO / "gavel_synth_multigpu_n100.trace", "gavel"),
    (SHARED / "gavel" / "0e4a51.trace", "gavel"),
    (SHARED / "gavel" / "2869ce.trace", "gavel"),
    (SHARED / "gavel" / "generated" / "gavel_synth_multigpu_lam900_n500.trace", "gavel"),
    (SHARED / "gavel" / "generated" / "gavel_philly_ed69ec_951jobs.trace", "gavel"),
    (SHARED / "shockwave" / "shockwave_120jobs_100.trace", "gavel"),
    (SHARED / "shockwave" / "shockwave_900jobs_1000.trace", "gavel"),
    (SHARED / "tiresias" / "60_job.csv", "tiresias"),
    (SHARED / "tiresias" / "tf_job.csv", "tiresias"),
]


@pytest.mark.parametrize(("path", "fmt"), SMALL, ids=lambda x: getattr(x, "name", x))
def test_small_shipped_traces_are_read_without_pyarrow_and_the_same(
    path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The small shipped traces take the pure-Python path, and it gives the pyarrow paths'
    table and report."""
    taken: list[int] = []
    columns = base.small_columns

    def spy(names: Any, rows: list[list[str]], *args: Any) -> Any:
        out = columns(names, rows, *args)
        taken.append(-1 if out is None else len(rows))
        return out

    monkeypatch.setattr(gavel, "small_columns", spy)
    monkeypatch.setattr(base, "small_columns", spy)
    done = both_ways(path, fmt)
    assert done[0] == "ok"
    assert taken and taken[0] == done[2]["jobs_read"]  # the first read: as it comes


def test_what_the_path_without_pyarrow_does_not_take(
    generated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generated Tiresias file of 2,000 jobs is read without pyarrow; a copy of a small one
    that is not ASCII, or too large a file, is not (and reads the same)."""
    read: list[int] = []
    small = base.small_header_table

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = small(*args, **kwargs)
        read.append(-1 if out is None else len(out[2]))
        return out

    monkeypatch.setattr(tiresias, "small_header_table", spy)
    read_trace(generated / "tiresias.csv", "tiresias")
    assert read == [2000]
    damaged = generated / "damaged.csv"
    text = (SHARED / "tiresias" / "60_job.csv").read_text()
    damaged.write_text(text.replace("vgg19", "vgg19\u2013b", 1))  # not ASCII
    assert read_trace(damaged, "tiresias")[1].jobs_read == 60
    assert read[-1] == -1
    monkeypatch.setattr(base, "SMALL_BYTES", 1000)
    read_trace(SHARED / "tiresias" / "60_job.csv", "tiresias")
    assert read[-1] == -1


NUMBER = r"[+-]?(?:[0-9]{1,20}(?:\.[0-9]{0,20})?|\.[0-9]{1,20})(?:[eE][+-]?[0-9]{1,3})?"


@SETTINGS
@given(
    values=st.lists(
        st.one_of(
            st.from_regex(NUMBER, fullmatch=True),
            st.floats(allow_nan=False).map(repr),
            st.sampled_from(["0.1", "2.2250738585072011e-308", "9007199254740993", "1e400"]),
            st.sampled_from(["inf", "-Infinity", "nan", " 1", "1_0", "0x10", "", "1e"]),
        ),
        min_size=3,
        max_size=12,
    )
)
def test_numbers_read_without_pyarrow_agree_with_pyarrow(tmp_path: Path, values: list[str]) -> None:
    """Every number the pure-Python path reads is the float pyarrow reads, bit for bit; what
    it does not take it leaves to pyarrow (same table, or same error)."""
    rows = [f"j{i},1,{i},{v}" for i, v in enumerate(values)]
    path = tmp_path / "numbers.csv"
    path.write_text("job_id,num_gpu,submit_time,duration\n" + "\n".join(rows) + "\n")
    both_ways(path, "tiresias")


# --- the conversions one by one -----------------------------------------------------------

TIME_CHARS = "0123456789-: T+Z.t/"


@SETTINGS
@given(
    st.lists(
        st.one_of(
            st.datetimes().map(lambda d: d.strftime("%Y-%m-%d %H:%M:%S").zfill(19)),
            st.text(alphabet=TIME_CHARS, min_size=19, max_size=19),
            st.sampled_from(
                [
                    "2017-02-29 00:00:00",
                    "2016-02-29 23:59:59",
                    "1900-02-29 00:00:00",
                    "2000-02-29 00:00:00",
                    "2017-10-03 24:00:00",
                    "2017-10-03 23:59:60",
                    "2017-10-03 12:34+05",
                    "2017-10-03T12:34:56",
                    "2017-10-03t12:34:56",
                    "0000-01-01 00:00:00",
                    "2017-10-03 12:34:5Z",
                ]
            ),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_iso_times_agree_with_the_strict_parser(values: list[str]) -> None:
    array = pa.array(values, type=pa.string())
    fast, fast_bad = base.to_datetime(array)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(base, "_iso_times", lambda values: None)
        slow, slow_bad = base.to_datetime(array)
    np.testing.assert_array_equal(fast_bad, slow_bad)
    np.testing.assert_array_equal(fast, slow)


NUMBER_CHARS = "0123456789.eE+-infatyIN "


@SETTINGS
@given(
    st.lists(
        st.one_of(
            st.floats(allow_nan=True).map(repr),
            st.integers(-(10**25), 10**25).map(str),
            st.text(alphabet=NUMBER_CHARS, max_size=8),
        ),
        min_size=1,
        max_size=8,
    ),
    st.booleans(),
    st.booleans(),
)
def test_numbers_read_by_pyarrow_agree_with_to_float(
    values: list[str], optional: bool, spaces: bool
) -> None:
    data = ("x,y\n" + "".join(f"{v},1\n" for v in values)).encode()
    cols = base.DelimitedText(data, ",").columns(
        "t", ["x", "y"], start=1, numbers={"x": optional}, spaces=spaces
    )
    strings = pa.array(values, type=pa.string())
    if not base.is_numbers(cols["x"]):
        assert cols["x"].to_pylist() == values  # fell back to the text
        return
    got = base.numbers_of(cols["x"])
    expected, bad = base.to_float(strings if not spaces else pa.array([v.strip() for v in values]))
    empty = np.array([v.strip() == "" for v in values])
    assert not (bad & ~empty).any()  # only numbers (and empty values) take this path
    assert optional or not empty.any()
    np.testing.assert_array_equal(got[~empty], expected[~empty])
    assert np.isnan(got[empty]).all()


@pytest.mark.parametrize(
    "ids",
    [
        ["1", "2", "3"],
        ["3", "1", "3", "2", "1"],
        ["1", "01", "+1", "1"],
        ["a", "b", "a"],
        ["-0", "0", "7", "-7", "7"],
        [],
    ],
)
def test_repeated_ids_are_found_with_or_without_hashing(ids: list[str]) -> None:
    values = pa.array(ids, type=pa.string())
    lines = np.arange(len(ids), dtype=np.int64) + 2
    fast = (base.later_repeats(values), generic.duplicate_lines([values], lines))
    with pytest.MonkeyPatch.context() as mp:
        slow_paths(mp)
        slow = (base.later_repeats(values), generic.duplicate_lines([values], lines))
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1], slow[1])
    expected = [v in ids[:i] for i, v in enumerate(ids)]
    assert fast[0].tolist() == expected


def test_blank_and_trim_shortcuts_agree() -> None:
    cases = [
        ["a", "b"],
        ["a", ""],
        [" a", "b"],
        ["a\t", "b"],
        ["\u3000x", "y"],
        ["é", "b"],
        [],
        ["a b", "c"],  # inner spaces: the edges are looked at one by one
        ["", "x y", ""],
        ["xé", "b "],
        ["\x7f", "~!"],
    ]
    for values in cases:
        array = pa.array(["pad", *values], type=pa.string()).slice(1)
        assert base.blank(array).tolist() == [not v.strip() for v in values]
        assert base.trim(array).to_pylist() == [v.strip() for v in values]
        assert base.no_blank(array) <= all(v.strip() for v in values)


# --- the Alibaba readers' shortcuts -------------------------------------------------------


@SETTINGS
@given(
    st.lists(
        st.sampled_from(["aa", "ab", "ba", "bb", "abcdefghi", "abcdefghj", "x" * 24]), max_size=12
    ),
    st.booleans(),
    st.booleans(),
)
def test_task_groups_are_found_with_or_without_hashing(
    names: list[str], adjacent: bool, sliced: bool
) -> None:
    if adjacent:  # the usual layout: the tasks of a job listed together
        names = sorted(names, key=names.index)
    values = pa.array(["pad", *names] if sliced else names, type=pa.string())
    if sliced:
        values = values.slice(1)
    expected = pa.compute.dictionary_encode(values)
    distinct, code = pai._group_codes(values)
    assert distinct.equals(expected.dictionary)
    assert code.tolist() == expected.indices.to_pylist()


def test_task_groups_fall_back_to_hashing_on_a_hash_collision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    values = pa.array(["job-a", "job-a", "job-b", "job-c", "job-c"], type=pa.string())
    assert pai._run_codes(values) is not None
    monkeypatch.setattr(pai, "_MIX", (np.uint64(0), np.uint64(0)))  # every value hashes to 0
    assert pai._run_codes(values) is None
    distinct, code = pai._group_codes(values)
    assert distinct.to_pylist() == ["job-a", "job-b", "job-c"]
    assert code.tolist() == [0, 0, 1, 2, 2]


TASKS = [
    "j0001,worker,1.0,Terminated,100.0,200.0,600.0,29.3,100.0,V100",
    "j0002,worker,2.0,Failed,110.0,300.0,600.0,29.3,50.0,T4",
    "j0002,ps,1.0,Terminated,105.0,290.0,400.0,10.0,,",
    "j0003,worker,1.0,Running,120.0,,600.0,29.3,100.0,P100",
    "j0004,worker,1.0,Terminated,130.0,180.0,600.0,29.3,400.0,MISC",
]
JOBS = [
    "j0001,i1,u1,Terminated,90.0,210.0",
    "j0002,i2,u2,Failed,100.0,310.0",
    "j0003,i3,u1,Running,115.0,",
    "j0004,i4,u3,Terminated,125.0,190.0",
]
PAI_VARIANTS: dict[str, tuple[list[str], list[str]]] = {
    "as is": (TASKS, JOBS),
    "a job's tasks apart": ([TASKS[1], TASKS[0], TASKS[3], TASKS[2], TASKS[4]], JOBS),
    "job table in another order": (TASKS, JOBS[::-1]),
    "job table repeats a job": (TASKS, [*JOBS, JOBS[1].replace("Failed", "Terminated")]),
    "names of different lengths": (
        [t.replace("j0003", "j3") for t in TASKS],
        [j.replace("j0003", "j3") for j in JOBS],
    ),
    "quoted name": (
        [t.replace("j0004", '"j0004"') for t in TASKS],
        [j.replace("j0004", '"j0004"') for j in JOBS],
    ),
    "spaces around a name": ([t.replace("j0001", " j0001") for t in TASKS], JOBS),
    "header and blank lines": (
        [",".join(pai.TASK_FIELDS), TASKS[0], "", *TASKS[1:], "  "],
        [",".join(pai.JOB_FIELDS), *JOBS[:2], "", *JOBS[2:]],
    ),
    "a job table row without tasks": (TASKS, [*JOBS, "j0009,i9,u9,Terminated,1.0,2.0"]),
    "bad number in a task row": ([*TASKS[:3], TASKS[3].replace("120.0", "12O.0"), TASKS[4]], JOBS),
    "empty job_name": ([*TASKS[:4], TASKS[4].replace("j0004", "")], JOBS),
    "missing field in a skipped column": (
        [*TASKS[:2], TASKS[2].replace(",ps,", ","), *TASKS[3:]],
        JOBS,
    ),
    "bad job table time": (TASKS, [*JOBS[:3], JOBS[3].replace("125.0", "x")]),
}


@pytest.mark.parametrize("label", list(PAI_VARIANTS))
def test_pai_tables_read_the_same_both_ways(tmp_path: Path, label: str) -> None:
    tasks, jobs = PAI_VARIANTS[label]
    task_path, job_path = tmp_path / "pai_task.csv", tmp_path / "pai_job.csv"
    task_path.write_text("\n".join(tasks) + "\n")
    job_path.write_text("\n".join(jobs) + "\n")
    outcomes = [
        both_ways(task_path, "alibaba-pai"),
        both_ways(task_path, "alibaba-pai", job_table=str(job_path)),
        both_ways(job_path, "alibaba-pai", task_table=str(task_path)),
    ]
    if label in ("as is", "a job's tasks apart", "job table in another order"):
        assert all(o[0] == "ok" for o in outcomes)
    if label.startswith("bad") or label == "empty job_name":
        assert any(o[0] == "error" for o in outcomes)


def test_small_blocks_and_compressed_copies_read_the_same(
    generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pyarrow splits a file in blocks whose pieces are joined afterwards; a line longer than
    a block makes the fast path give way. A compressed copy is read through its source."""
    import gzip

    expected = {
        name: both_ways(generated / name, fmt, **options)
        for name, fmt, options in [
            ("pai_task.csv", "alibaba-pai", {}),
            ("pai_job.csv", "alibaba-pai", {"task_table": str(generated / "pai_task.csv")}),
            ("openb.csv", "alibaba-openb", {}),
        ]
    }
    packed = tmp_path / "openb.csv.gz"
    packed.write_bytes(gzip.compress((generated / "openb.csv").read_bytes()))
    got = outcome(lambda: read_trace(packed, "alibaba-openb"))
    assert got[0] == "ok"
    assert got[2]["assumptions"] == expected["openb.csv"][2]["assumptions"]
    assert got[1] == expected["openb.csv"][1]
    data = (generated / "openb.csv").read_bytes()
    names = data[: data.index(b"\n")].decode().split(",")
    for block, taken in ((200, True), (40, False)):  # lines of 50 to 90 bytes
        monkeypatch.setattr(base, "_BLOCK_BYTES", block)
        plain = base.DelimitedText(data, ",")._columns_plain(names, 1)
        assert (plain is not None) == taken
        if taken:
            assert plain is not None and isinstance(plain["name"], pa.Array)
        assert both_ways(generated / "openb.csv", "alibaba-openb") == expected["openb.csv"]
        assert both_ways(generated / "pai_task.csv", "alibaba-pai") == expected["pai_task.csv"]


def test_finite_max_and_nan_to_zero_agree_with_numpy() -> None:
    cases = [
        [np.array([1.0, np.nan, 3.0]), np.array([np.inf, 2.0]), np.array([])],
        [np.array([np.nan]), np.array([-np.inf])],
        [np.array([-0.0, -1.0]), np.array([0.0])],
        [np.array([0.0, -2.0]), np.array([-0.0, np.nan])],
        [np.array([-5.0, -3.0])],
    ]
    for columns in cases:
        every = np.concatenate(columns)
        every = every[np.isfinite(every)]
        expected = float(every.max()) if len(every) else 0.0
        got = openb._finite_max(columns)
        assert repr(got) == repr(expected)
    values = np.array([1.0, np.nan, np.inf, -np.inf, -0.0, 2.5])
    for x in (values, values[[0, 5]], values[:0]):
        assert repr(pai._nan_to_zero(x).tolist()) == repr(np.nan_to_num(x, nan=0.0).tolist())


def test_numbers_come_writable() -> None:
    data = b"a,b\n1,\n2,3\n"
    text = base.DelimitedText(data, ",")
    cols = text.columns("t", ["a", "b"], start=1, numbers={"a": False, "b": True})
    assert base.is_numbers(cols["a"]) and base.is_numbers(cols["b"])
    for name in ("a", "b"):
        out = base.numbers_of(cols[name])
        out[0] = 7.0  # the caller may write: a copy of pyarrow's memory, not a view
    assert base.numbers_of(cols["a"]).tolist() == [1.0, 2.0]

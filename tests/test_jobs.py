"""The job table's constructor: ids always become Python strings, whatever their source."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from clustersim.jobs import JobTable


@pytest.mark.parametrize(
    ("ids", "want"),
    [
        (np.array([7, -2, 30]), ["7", "-2", "30"]),
        (np.array([7, 2, 30], dtype=np.uint32), ["7", "2", "30"]),
        (np.array(["a", "bb", "c"]), ["a", "bb", "c"]),
        (pa.array(["a", "bb", "c"]), ["a", "bb", "c"]),
        (pa.chunked_array([["a"], ["bb", "c"]]), ["a", "bb", "c"]),
        ([1, "bb", 2.5], ["1", "bb", "2.5"]),
        (np.array([1.5, 2.0, 3.25]), ["1.5", "2.0", "3.25"]),
    ],
)
def test_job_ids_become_python_strings(ids: object, want: list[str]) -> None:
    t = JobTable.from_columns(job_id=ids, submit_time=[0, 1, 2], num_gpus=[1, 1, 1], work=[1, 1, 1])
    assert t.job_id.dtype == object
    assert t.job_id.tolist() == want
    assert all(type(x) is str for x in t.job_id)

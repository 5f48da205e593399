"""Bounds on what one task may take from its worker process (the parse task's memory)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

try:
    import resource
except ImportError:  # not on this platform: no bound
    resource = None  # type: ignore[assignment]

#: The process's own data-segment limits, as they were before any task changed them: every
#: bound is computed from (and restored to) these, so a restore that a time limit interrupted
#: cannot leave the next task with a smaller bound.
_ORIGINAL: tuple[int, int] | None = (
    resource.getrlimit(resource.RLIMIT_DATA)
    if resource is not None and hasattr(resource, "RLIMIT_DATA")
    else None
)


def data_bytes() -> int | None:
    """The process's private writable memory (heap, anonymous mappings: Linux's ``VmData``,
    what ``RLIMIT_DATA`` counts); ``None`` where ``/proc`` does not say."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


@contextlib.contextmanager
def memory_limit(extra_bytes: int) -> Iterator[int | None]:
    """Let the code inside allocate at most ``extra_bytes`` more than the process holds now.

    A data-segment limit (``RLIMIT_DATA``, which Linux applies to the heap and to every
    private writable mapping, so to numpy's, pyarrow's and Python's allocations): past it an
    allocation raises ``MemoryError`` in the code that made it, instead of the kernel killing
    the worker. Address space merely reserved (thread arenas, guard pages) does not count, so
    thread pools do not eat the bound. The limit is the process's (every thread's) while the
    block runs: meant for a prefork worker's child, which runs one task at a time. Yields the
    limit set (``None``: no limit, when ``extra_bytes`` is 0 or the platform has none).
    """
    now = data_bytes()
    if extra_bytes <= 0 or _ORIGINAL is None or resource is None or now is None:
        yield None
        return
    soft, hard = _ORIGINAL
    limit = now + int(extra_bytes)
    for cap in (soft, hard):
        if cap != resource.RLIM_INFINITY:
            limit = min(limit, cap)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    try:
        yield limit
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, _ORIGINAL)

"""Bounds on what one task may take from its worker process (the parse task's memory)."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

log = logging.getLogger(__name__)

try:
    import resource
except ImportError:  # not on this platform: no bound
    resource = None  # type: ignore[assignment]

#: The process's own address-space limits, as they were before any task changed them: every
#: bound is computed from (and restored to) these, so a restore that a time limit interrupted
#: cannot leave the next task with a smaller bound.
_ORIGINAL: tuple[int, int] | None = (
    resource.getrlimit(resource.RLIMIT_AS)
    if resource is not None and hasattr(resource, "RLIMIT_AS")
    else None
)


def mapped_bytes() -> int | None:
    """The process's virtual memory size (Linux ``/proc/self/statm``); ``None`` elsewhere."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


@contextlib.contextmanager
def memory_limit(extra_bytes: int) -> Iterator[int | None]:
    """Let the code inside map at most ``extra_bytes`` more memory than the process holds now.

    An address-space limit (``RLIMIT_AS``): an allocation past it raises ``MemoryError`` in
    the code that made it (numpy, pyarrow and Python's own allocator all do), instead of the
    kernel killing the worker. The limit is the process's (every thread's) while the block
    runs: meant for a prefork worker's child, which runs one task at a time. Yields the limit
    set (``None``: no limit, when ``extra_bytes`` is 0 or the platform has none).
    """
    now = mapped_bytes()
    if extra_bytes <= 0 or _ORIGINAL is None or resource is None or now is None:
        yield None
        return
    soft, hard = _ORIGINAL
    limit = now + int(extra_bytes)
    for cap in (soft, hard):
        if cap != resource.RLIM_INFINITY:
            limit = min(limit, cap)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield limit
    finally:
        resource.setrlimit(resource.RLIMIT_AS, _ORIGINAL)

"""Error types raised by the simulator library.

Every error a user can cause with bad input is one of these, so callers (the command line,
the web app) can show a one-line message instead of a traceback.
"""

from __future__ import annotations


class ClustersimError(Exception):
    """Base class of every error the library raises on purpose."""


class SpecError(ClustersimError):
    """An invalid cluster specification.

    Parameters
    ----------
    field
        Dotted path of the offending field, e.g. ``"pools[2].accelerator"``.
    message
        What is wrong with it.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class TraceError(ClustersimError):
    """A trace file that cannot be read.

    Parameters
    ----------
    path
        The file (as given by the caller).
    line
        1-based line number in the file (0 when the error is not tied to one line).
    field
        Column or field name, or ``""``.
    message
        What is wrong.
    """

    def __init__(self, path: str, line: int, field: str, message: str) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.message = message
        where = f"{path}:{line}" if line else path
        if field:
            where += f" [{field}]"
        super().__init__(f"{where}: {message}")


class SimulationError(ClustersimError):
    """A scenario the engine cannot simulate (e.g. a policy returned an invalid decision)."""


class TraceLimitError(TraceError):
    """A trace file over one of the reading limits (:class:`clustersim.traces.ReadLimits`).

    Parameters
    ----------
    path, line, field, message
        As for :class:`TraceError`; ``message`` names the limit, its value and how to raise
        it.
    limit
        Name of the :class:`~clustersim.traces.ReadLimits` attribute, e.g.
        ``"max_line_bytes"``.
    value
        The limit's value.
    """

    def __init__(
        self, path: str, line: int, field: str, message: str, limit: str, value: int
    ) -> None:
        self.limit = limit
        self.value = value
        super().__init__(path, line, field, message)

"""pyarrow for the trace readers, imported when a reader first uses it.

Importing pyarrow (and, through its conversions, pandas) costs more than reading a small trace
takes, so the readers' modules do not import it: they take ``pa``, ``pc`` and ``pacsv`` from
here, stand-ins for ``pyarrow``, ``pyarrow.compute`` and ``pyarrow.csv`` that import the real
module on their first attribute access. Code that only needs to know whether a value is a
pyarrow array asks :func:`is_arrow_array`, which never imports pyarrow.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__all__ = ["LazyModule", "is_arrow_array", "pa", "pacsv", "pc"]


class LazyModule(types.ModuleType):
    """A module imported on the first access to one of its attributes.

    Parameters
    ----------
    name
        The module's import name, e.g. ``"pyarrow.compute"``.
    """

    def __getattr__(self, attr: str) -> Any:
        # only called for names not found here: after the import, the module's names are
        # copied in, so later accesses cost a plain attribute lookup
        module = importlib.import_module(self.__name__)
        self.__dict__.update(
            (k, v) for k, v in vars(module).items() if not k.startswith("__") or k == "__all__"
        )
        return getattr(module, attr)


def is_arrow_array(value: object) -> bool:
    """Whether ``value`` is a ``pyarrow.Array`` (without importing pyarrow: when it is not
    imported, nothing is one)."""
    module = sys.modules.get("pyarrow")
    return module is not None and isinstance(value, module.Array)


if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv
else:
    pa = LazyModule("pyarrow")
    pc = LazyModule("pyarrow.compute")
    pacsv = LazyModule("pyarrow.csv")

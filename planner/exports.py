"""CSV downloads that a spreadsheet opens as data, never as formulas.

Job ids, users, node names and the like come from uploaded traces and inventories. A cell
that starts with ``=``, ``+``, ``-`` or ``@`` (or a tab or carriage return, which some
spreadsheets skip before reading a formula) is run as a formula when the CSV is opened in
Excel, LibreOffice or Google Sheets (CSV injection: ``=HYPERLINK(...)``, ``=cmd|...``).
Following OWASP's advice, :func:`csv_text` prefixes such a *text* cell with a single quote, so
it is shown as written; numbers are numbers, not text, and are left alone (``-1.5`` stays a
negative number). Lines end in CRLF (RFC 4180), so a cell holding a carriage return or a line
feed is quoted and cannot start a row of its own. Every CSV export (the API's job and stint
tables, the dashboard's chart data) goes through :func:`csv_text`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is imported when a table is exported, not with the web app
    import pandas as pd

#: First characters that make a spreadsheet read a cell as a formula (OWASP).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: Any) -> Any:
    """``value`` with a leading ``'`` when it is text a spreadsheet would run as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value


def _safe_column(column: pd.Series) -> pd.Series:
    import pandas as pd

    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.rename_categories(neutralise)
    if column.dtype == object or pd.api.types.is_string_dtype(column.dtype):
        return column.map(neutralise, na_action="ignore")
    return column  # numbers, booleans, times: never formulas


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names are neutralised."""
    import pandas as pd

    if frame.shape[1] == 0:
        return frame.copy()
    out = pd.DataFrame({i: _safe_column(frame.iloc[:, i]) for i in range(frame.shape[1])})
    out.index = frame.index
    out.columns = [neutralise(c) for c in frame.columns]
    return out


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` as CSV text (no index, CRLF line ends), safe to open in a spreadsheet."""
    return str(safe_frame(frame).to_csv(index=False, lineterminator="\r\n"))

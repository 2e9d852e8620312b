"""`--engine auto`: pick the engine that judges a history, and say why.

pandas where the history fits comfortably in memory, Spark above that or
whenever a Spark master is given (or asked for by name). The size comes from
the Parquet footers' row counts (a JSONL table's from its file size), never
from reading a row; the memory from /proc/meminfo's MemAvailable. "Comfortably"
is PANDAS_SHARE of what is available: the pandas engine peaks near
PANDAS_BYTES_PER_ROW bytes a row (measured: 5.8 GiB at 10M rows, 0.8 GiB at
1M), so on a 24 GiB machine auto judges up to a few million rows with pandas
and the rest with Spark, and pandas never runs the machine out of memory.
Must never: read a table's rows, or fail (an unreadable footer counts as large).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pyarrow.parquet as pq

from checkers.errors import TooLarge
from checkers.sources import TableSource

AUTO = "auto"
PANDAS_BYTES_PER_ROW = 600  # the pandas engine's peak memory per history row, with a margin (BENCHMARKS.md)
PANDAS_BASE_BYTES = 300 * 2**20  # Python, pandas and pyarrow themselves
PANDAS_SHARE = 0.25  # pandas judges when its estimate is at most this share of the available memory
JSONL_BYTES_PER_ROW = 150  # a history JSONL line is 120-200 bytes
GIB = 2**30


def history_rows(sources: dict[str, TableSource]) -> int:
    """Rows of `writes` and `reads`, from Parquet footers (JSONL: estimated from the file size)."""
    total = 0
    for name in ("writes", "reads"):
        source = sources[name]
        for file in source.files:
            if source.format == "parquet":
                total += pq.ParquetFile(file).metadata.num_rows
            else:
                total += max(1, Path(file).stat().st_size // JSONL_BYTES_PER_ROW)
    return total


def available_bytes() -> int:
    """MemAvailable of /proc/meminfo (elsewhere: physical memory pages, or 4 GiB if unknown)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 4 * GIB


def pandas_estimate(rows: int) -> int:
    """The pandas engine's expected peak memory, in bytes, for a history of ``rows`` rows."""
    return PANDAS_BASE_BYTES + rows * PANDAS_BYTES_PER_ROW


def refuse_pandas(sources: dict[str, TableSource], instead: str) -> None:
    """Raise TooLarge when the pandas engine's estimate passes the available memory (an unreadable footer:
    nothing raised here, the engine names the problem)."""
    try:
        rows = history_rows(sources)
    except Exception:  # noqa: BLE001 - the engine's own reading says what is wrong
        return
    need, have = pandas_estimate(rows), available_bytes()
    if need > have:
        where = sources["writes"].path.parent
        raise TooLarge(f"{where}: {rows:,} rows need about {need / GIB:.1f} GiB with the pandas engine, "
                       f"{have / GIB:.1f} GiB available: {instead}")


def choose_engine(
    requested: str, sources: dict[str, TableSource], spark_master: str | None = None
) -> tuple[str, str]:
    """(engine, reason): the engine that judges and why, for ``--engine requested``.

    Raises TooLarge when that is pandas and the history would not fit in the available memory.
    """
    if requested == "pandas":
        refuse_pandas(sources, "use --engine spark (or auto)")
    if requested != AUTO:
        return requested, f"asked for (--engine {requested})"
    spark_installed = importlib.util.find_spec("pyspark") is not None
    if spark_master:
        return "spark", f"auto: a Spark master was given ({spark_master})"
    try:
        rows = history_rows(sources)
    except Exception as exc:  # noqa: BLE001 - an unreadable footer: let the engine name the problem
        rows, why = -1, f"row count unknown ({type(exc).__name__})"
    need, have = pandas_estimate(max(rows, 0)), available_bytes()
    if rows >= 0:
        why = f"{rows:,} rows need about {need / GIB:.1f} GiB with pandas, {have / GIB:.1f} GiB available"
    fits = rows >= 0 and need <= PANDAS_SHARE * have
    if fits or not spark_installed:
        if not fits:
            refuse_pandas(sources, "install Spark (pip install 'faultline[spark]') and use --engine spark")
        suffix = "" if fits else "; Spark is not installed"
        return "pandas", f"auto: {why} (fits in {PANDAS_SHARE:.0%}){suffix}"
    return "spark", f"auto: {why} (more than {PANDAS_SHARE:.0%})"

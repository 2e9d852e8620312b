"""`check`: judge one history directory and return the verdict.

Bad input raises HistoryError (nothing is judged). Any other failure inside
the engine returns an "unknown" verdict naming the reason.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from checkers import group_terms
from checkers import verdict as v
from checkers.auto import AUTO, choose_engine
from checkers.context import load_context
from checkers.engine import Engine
from checkers.errors import HistoryError
from checkers.examples import build_examples
from checkers.sources import TableSource, locate_history
from checkers.tables import validate_source

ENGINES = (AUTO, "spark", "pandas")  # auto: checkers.auto picks pandas or Spark by the history's size
# Each engine's package outside the core dependencies, and the extra of faultline's that brings it.
_ENGINE_PACKAGES = {"spark": ("pyspark", "spark")}


def missing_engine(name: str) -> str | None:
    """Why engine `name` cannot run in this Python (its package is not installed), or None if it can."""
    package = _ENGINE_PACKAGES.get(name)
    if package is None or importlib.util.find_spec(package[0]) is not None:
        return None
    return (f"the {name} checker engine needs {package[0]}, which is not installed: "
            f"pip install 'faultline[{package[1]}]', or use --engine pandas")


def make_engine(name: str, spark_master: str | None = None) -> Engine:
    """An engine by name; Spark is imported only when asked for."""
    if name == "pandas":
        from checkers.pandas_engine import PandasEngine

        return PandasEngine()
    if name == "spark":
        from checkers.spark_engine import SparkEngine

        return SparkEngine(spark_master)
    raise ValueError(f"unknown engine {name!r}; expected one of {', '.join(ENGINES)}")


def check(history_dir: str | Path, engine: str = AUTO, spark_master: str | None = None) -> dict[str, Any]:
    """The verdict (spec/history.md) of the history in ``history_dir``.

    ``engine`` auto picks pandas or Spark (checkers.auto); the verdict's ``engine`` names the one
    that judged and ``engine_reason`` why. Raises HistoryError when the input is unreadable or breaks
    the contract.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    sources = locate_history(history_dir)
    engine, reason = choose_engine(engine, sources, spark_master)
    verdict = _judge(sources, engine, spark_master)
    # engine_reason right after engine: the verdict's keys keep one order (stable bytes)
    return {k: x for key, value in verdict.items()
            for k, x in ((key, value), *([("engine_reason", reason)] if key == "engine" else []))}


def _judge(sources: dict[str, TableSource], engine: str, spark_master: str | None) -> dict[str, Any]:
    context = load_context(sources)
    if engine == "spark":
        # Fail on bad JSONL or Parquet schemas before a JVM starts.
        for name in ("writes", "reads"):
            validate_source(sources[name])
    try:
        runner = make_engine(engine, spark_master)
        analysis = runner.analyse(sources, context.configs)
        examples = build_examples(analysis, runner, context)
    except HistoryError:
        raise
    except Exception as exc:  # an engine failure is "unknown", never a crash or a pass
        return v.failed(engine, exc)
    return v.assemble(engine, analysis, examples, unknown=group_terms.unknown_reason(context.groups))

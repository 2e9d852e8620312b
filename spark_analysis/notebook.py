"""Run the analysis notebook headless: papermill executes it, nbconvert exports the HTML.

`python -m spark_analysis.notebook --lake DIR [--spark-master URL] [--scenarios a,b] [--since DAY]`
(what `make notebook` runs) writes `<lake>-analysis.ipynb` (the executed copy, every output
kept) and `<lake>-analysis.html` beside the lake folder, and prints both paths. A lake that holds
no run yet is one line and exit status 0 (nothing is executed); no lake at all is exit status 3.
Must never: change the committed notebook (it is only read), or write into the lake.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from spark_analysis.lake import committed
from spark_analysis.lake_tables import META_FILE
from testbed.paths import REPO_ROOT, RESULTS_DIR

NOTEBOOK = REPO_ROOT / "spark_analysis" / "analysis.ipynb"
SUMMARY_TAG = "summary"


def outputs_of(lake: Path) -> tuple[Path, Path]:
    """The executed copy and its HTML export, next to the lake."""
    base = lake.resolve().parent / f"{lake.resolve().name}-analysis"
    return base.with_suffix(".ipynb"), base.with_suffix(".html")


def run_notebook(lake: Path, spark_master: str = "local[*]", scenarios: str = "", since: str = "",
                 drill_run: str = "", timeout_s: int = 600) -> tuple[Path, Path]:
    import nbformat
    import papermill
    from nbconvert import HTMLExporter

    executed, html = outputs_of(lake)
    papermill.execute_notebook(
        str(NOTEBOOK), str(executed), cwd=str(REPO_ROOT), progress_bar=False, log_output=False,
        execution_timeout=timeout_s, kernel_name="python3",
        parameters={"lake": str(lake.resolve()), "spark_master": spark_master, "scenarios": scenarios,
                    "since": since, "drill_run": drill_run})
    body, _ = HTMLExporter().from_notebook_node(nbformat.read(str(executed), as_version=4))
    html.write_text(body, encoding="utf-8")
    return executed, html


def summary_of(executed: Path) -> dict[str, Any]:
    """The JSON line the notebook's summary cell printed (`SUMMARY {...}`)."""
    notebook = json.loads(executed.read_text(encoding="utf-8"))
    for cell in notebook["cells"]:
        if SUMMARY_TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        for output in cell.get("outputs", []):
            for line in "".join(output.get("text", "")).splitlines():
                if line.startswith("SUMMARY "):
                    return dict(json.loads(line.removeprefix("SUMMARY ")))
    raise ValueError(f"{executed}: no SUMMARY line in the summary cell's output")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_analysis.notebook", description=__doc__.splitlines()[0])
    parser.add_argument("--lake", type=Path, default=RESULTS_DIR / "lake")
    parser.add_argument("--spark-master", default="local[*]")
    parser.add_argument("--scenarios", default="", help="comma-separated scenario names (default: all)")
    parser.add_argument("--since", default="", help="first day, YYYY-MM-DD (default: all)")
    parser.add_argument("--run", default="", help="the run_id to drill into (default: the one that lost most)")
    args = parser.parse_args(argv)
    if not (args.lake / "runs").is_dir() and not (args.lake / META_FILE).is_file():
        print(f"notebook: {args.lake}: no lake here (run python -m spark_analysis ingest first)", file=sys.stderr)
        return 3
    if not committed(args.lake)[0]:
        print(f"notebook: {args.lake} holds no runs yet, nothing to analyse (run a scenario, then ingest it)")
        return 0
    started = time.monotonic()
    executed, html = run_notebook(args.lake, args.spark_master, args.scenarios, args.since, args.run)
    print(f"notebook: {executed} and {html} in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The notebook's files: parameters cell, summary cell, where the executed copy goes, how its numbers are read."""

from __future__ import annotations

import io
import json
from pathlib import Path

import nbformat
import pytest

from spark_analysis.ingest import ingest
from spark_analysis.notebook import NOTEBOOK, SUMMARY_TAG, main, outputs_of, summary_of


def test_the_notebook_is_parameterised_and_reads_only_the_lake() -> None:
    notebook = nbformat.read(str(NOTEBOOK), as_version=4)
    nbformat.validate(notebook)
    tagged = {tag: cell for cell in notebook.cells for tag in cell.metadata.get("tags", [])}
    for name in ("lake", "spark_master", "scenarios", "since", "drill_run"):
        assert f"{name} = " in tagged["parameters"].source, name
    assert "SUMMARY " in tagged[SUMMARY_TAG].source
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    assert "history" not in code and "verdict.json" not in code, "the notebook reads the lake, not run folders"
    sections = [c.source.splitlines()[0] for c in notebook.cells if c.cell_type == "markdown"]
    assert len([s for s in sections if s.startswith("## ")]) == 10 and "## Transactions" in sections
    assert "## Commit modes" in sections and "q.commit_modes(runs, commits)" in code
    assert "## Anomalies by version × scenario" in sections and "q.anomalies_by_version(runs)" in code
    # every run outcome's count, INCONCLUSIVE too, from the one list (no table of its own PASS, FAIL, ERROR)
    assert code.count("q.OUTCOME_COLUMNS.values()") == 2 and '"pass", "fail", "error"' not in code


def test_outputs_go_beside_the_lake(tmp_path: Path) -> None:
    assert outputs_of(tmp_path / "lake") == (tmp_path / "lake-analysis.ipynb", tmp_path / "lake-analysis.html")


def test_the_summary_line_is_read_from_the_summary_cell(tmp_path: Path) -> None:
    executed = tmp_path / "x.ipynb"
    cell = {"cell_type": "code", "metadata": {"tags": [SUMMARY_TAG]},
            "outputs": [{"output_type": "stream", "name": "stdout", "text": ['SUMMARY {"runs": 2}\n']}]}
    executed.write_text(json.dumps({"cells": [cell]}))
    assert summary_of(executed) == {"runs": 2}
    executed.write_text(json.dumps({"cells": [{**cell, "outputs": []}]}))
    with pytest.raises(ValueError, match="no SUMMARY line"):
        summary_of(executed)


def test_no_lake_is_one_line_and_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--lake", str(tmp_path / "nothing")]) == 3
    assert "no lake here" in capsys.readouterr().err


def test_an_empty_lake_is_one_line_and_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "results").mkdir()
    ingest(tmp_path / "results", tmp_path / "lake", io.StringIO())
    assert main(["--lake", str(tmp_path / "lake")]) == 0
    out = capsys.readouterr()
    assert out.out.count("\n") == 1 and "holds no runs yet" in out.out and out.err == ""
    assert not any(path.exists() for path in outputs_of(tmp_path / "lake")), "nothing is executed"

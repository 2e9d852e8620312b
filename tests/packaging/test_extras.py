"""What a `pip install .` without extras imports: the run, the report and the checker need none of them.

The extras (pyspark, docker, paramiko) are blocked in a fresh interpreter; importing the modules a
plain run goes through must not reach for them (a report that imported paramiko for the ssh clock's
type could not write junit.xml in an install without the ssh extra).
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def blocking(names: tuple[str, ...], why: str) -> str:
    """Code that makes importing any of `names` (and their submodules) fail in the interpreter that runs it."""
    return f"""
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {names!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} ({why})")
sys.meta_path.insert(0, Block())
"""


BLOCK_EXTRAS = blocking(("pyspark", "docker", "paramiko"), "an extra")


def test_a_run_and_its_report_import_none_of_the_extras() -> None:
    modules = ("faultline.cli", "harness.scenario", "harness.run", "report", "report.junit", "checkers.api",
               "checkers.pandas_engine", "campaign.command", "testbed.runtime.kinds")
    code = BLOCK_EXTRAS + "".join(f"import {m}\n" for m in modules) + "print('ok')\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


BLOCK_TABLES = blocking(("pyarrow", "pandas", "numpy"), "not on a node host")


def test_an_observer_on_a_node_host_imports_no_table_library() -> None:
    """A node host (the faultline/kafka image) runs the observer with no pyarrow or pandas: what its process imports,
    the contract's names among them (checkers.schema through workloads.config), must not reach for them."""
    modules = ("workloads.config", "workloads.observer", "workloads.journal", "checkers.schema", "checkers.anomalies")
    code = BLOCK_TABLES + "".join(f"import {m}\n" for m in modules) + "print('ok')\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
    broken = BLOCK_TABLES + "import checkers.api\n"  # the check itself does need them: the block works
    assert subprocess.run([sys.executable, "-c", broken], capture_output=True, cwd=REPO, timeout=120).returncode != 0

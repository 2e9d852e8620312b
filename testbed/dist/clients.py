"""The confluent-kafka client under test: its venv on this machine, and what each client version can do.

A spec's `clients.confluent_kafka: X` runs the producers and consumers under test with
confluent-kafka X (and the librdkafka its wheel bundles) instead of the harness's own. Each
version gets a venv of its own, `<cache>/venv-ck-<X>`, made once with pyenv's Python 3.10
(the newest CPython every wheel from 1.9.0 on is built for; the workloads need 3.10) and
`pip install confluent-kafka==X` from PyPI; the workloads run from this checkout
(`PYTHONPATH`), and need nothing but confluent-kafka. A failed build leaves no venv behind;
a complete one carries `faultline-client.json` (the versions it reported), written last.

The drain, the observers and the admin never use it: they stay on the harness's client, so a
verdict never depends on the client under test.
Must never: start a cluster; it only builds and describes venvs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import DistributionError
from testbed.paths import CACHE_DIR, REPO_ROOT

CLIENT_RE = re.compile(r"^\d+\.\d+\.\d+$")
OLDEST_CLIENT = (1, 9, 0)  # the oldest with a Python 3.10 wheel (1.8.2 stops at 3.9)
PYENV_PYTHON = "3.10"
MARKER = "faultline-client.json"



def parse_client(version: str) -> tuple[int, ...]:
    """The client version's numbers; DistributionError (one line) for one faultline cannot run."""
    if not isinstance(version, str) or not CLIENT_RE.match(version):
        raise DistributionError(f"confluent_kafka {version!r}: not a confluent-kafka version (X.Y.Z, e.g. 2.1.1)")
    parts = tuple(int(p) for p in version.split("."))
    if parts < OLDEST_CLIENT:
        raise DistributionError(f"confluent_kafka {version}: faultline runs clients from 1.9.0 on (older ones have "
                                f"no wheel for Python 3.10, which the workloads need)")
    return parts


@dataclass(frozen=True)
class ClientEnv:
    """A client venv ready to run the workloads: the argv prefix of `python -m workloads` and its versions."""

    version: str
    python: tuple[str, ...]
    versions: dict[str, str]  # confluent_kafka, librdkafka, python: as the venv itself reports them


def venv_dir(version: str) -> Path:
    return CACHE_DIR / f"venv-ck-{version}"


def _base_python() -> str:
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(root.glob(f"{PYENV_PYTHON}.*/bin/python"), key=lambda p: [int(x) for x in
                   re.findall(r"\d+", p.parent.parent.name)])
    if not found:
        raise DistributionError(f"client venvs need pyenv's Python {PYENV_PYTHON} ({root}/{PYENV_PYTHON}.*), "
                                f"which is not installed (pyenv install {PYENV_PYTHON})")
    return str(found[-1])


# What a venv's Python (pyenv's prefix) holds that no workload uses: its tests, the static library, its own
# site-packages (a venv does not see them), Tk and IDLE: 125 of its 193 MB (3.10.13). Paths in the prefix that start
# so are left out when it is copied to another host.
PREFIX_UNUSED = tuple(f"lib/python{PYENV_PYTHON}/{name}" for name in (
    "test/", "config-", "site-packages/", "idlelib/", "tkinter/", "ensurepip/", "lib2to3/tests/"))


def venv_tree(version: str) -> tuple[Path, Path]:
    """The cached venv of `version` and the Python prefix it runs on (its pyvenv.cfg `home`'s parent): what
    another host needs, at the same absolute paths, to run it (the venv's bin/python links to the prefix's and
    the prefix's python finds libpython by an absolute RUNPATH)."""
    venv = venv_dir(version)
    try:
        home = re.search(r"^home\s*=\s*(\S+)\s*$", (venv / "pyvenv.cfg").read_text(), re.MULTILINE)
    except OSError as exc:
        raise DistributionError(f"confluent_kafka {version}: its venv {venv} is unreadable: {exc.strerror}") from exc
    if home is None:
        raise DistributionError(f"confluent_kafka {version}: {venv}/pyvenv.cfg names no home (not a venv)")
    return venv, Path(home.group(1)).parent


def _argv(venv: Path) -> tuple[str, ...]:
    return ("env", f"PYTHONPATH={REPO_ROOT}", str(venv / "bin" / "python"))


# What a client venv reports of itself (its `MARKER`'s content), printed as one JSON line by its python.
PROBE = ("import json, platform, confluent_kafka as c; v = c.version(); "
         "print(json.dumps({'confluent_kafka': v if isinstance(v, str) else v[0], "
         "'librdkafka': c.libversion()[0], 'python': platform.python_version()}, sort_keys=True))")


def _probe(python: str) -> dict[str, str]:
    proc = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise DistributionError(f"the client venv's python cannot import confluent_kafka: "
                                f"{(proc.stderr.strip().splitlines() or ['?'])[-1][:200]}")
    out: dict[str, str] = json.loads(proc.stdout)
    return out


def cached_client(version: str) -> ClientEnv | None:
    """The venv of `version` if a complete one is cached."""
    venv = venv_dir(version)
    try:
        versions = json.loads((venv / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return ClientEnv(version, _argv(venv), versions)


def made_on_hosts(version: str) -> ClientEnv:
    """The client under test on a runtime whose client hosts make its venv themselves at bring-up (its kind's
    `client_venvs_on_hosts`): nothing is made here; the python and the versions are each host's (the runtime's
    `client_report`)."""
    parse_client(version)
    return ClientEnv(version, (), {})


def ensure_client(version: str) -> ClientEnv:
    """The venv of confluent-kafka `version`, made first if it is not cached (DistributionError, one line)."""
    parse_client(version)
    found = cached_client(version)
    if found is not None:
        return found
    target = venv_dir(version)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(target, ignore_errors=True)  # a venv without its marker is a build that did not finish
    staging = Path(tempfile.mkdtemp(prefix=f".venv-ck-{version}.", dir=target.parent))
    try:
        made = subprocess.run([_base_python(), "-m", "venv", str(staging)], capture_output=True, text=True,
                              timeout=300)
        pip = made if made.returncode != 0 else subprocess.run(
            [str(staging / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
             "--only-binary", ":all:", f"confluent-kafka=={version}"], capture_output=True, text=True, timeout=900)
        if pip.returncode != 0:
            tail = (pip.stderr.strip().splitlines() or ["?"])[-1][:200]
            raise DistributionError(f"confluent_kafka {version}: its venv could not be made: {tail}")
        staging.rename(target)  # a venv finds its packages relative to its own bin/python: it moves whole
        versions = _probe(str(target / "bin" / "python"))
        (target / MARKER).write_text(json.dumps(versions, sort_keys=True) + "\n")
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return ClientEnv(version, _argv(target), versions)

"""The client under test over SSH, on the sshd test bed (Debian 12 hosts: python3 3.11): a version with no wheel for
the client hosts' Python refused at preflight in one line, nothing left on a host; then smoke with confluent-kafka
2.10.1, each client host making its venv with its own python3 (testbed.runtime.ssh_client_venvs), and producer-az1-0
rolled onto 2.13.2 mid-run (upgrade-client). Named to run after test_ssh_runs, which needs a fresh test bed."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from testbed.sshbed import SshTestBed
from tests.conftest import REPO, faultline, run_dir_of
from tests.ssh.test_ssh_runs import nothing_of_runs_left

pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.versions]  # `make test-versions`-like: kept out

# Both have cp311 wheels and neither is the harness's own (requirements.txt: 2.16.1, which the drain runs).
CLIENT, UPGRADE = "2.10.1", "2.13.2"


def smoke(tmp_path: Path, client: str, nemesis: list[dict[str, object]]) -> Path:
    spec = yaml.safe_load((REPO / "scenarios" / "smoke.yaml").read_text())
    spec.update(duration_s=25, clients={"confluent_kafka": client}, nemesis=nemesis)
    path = tmp_path / f"smoke-{client}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_client_with_no_wheel_for_the_hosts_python_is_refused_before_anything_starts(testbed: SshTestBed,
                                                                                       tmp_path: Path) -> None:
    proc = faultline("run", str(smoke(tmp_path, "1.9.2", [])), "--inventory", str(testbed.inventory),
                     "--known-hosts", str(testbed.known_hosts), "--results", str(tmp_path / "results"), timeout=300)
    assert proc.returncode == 3, proc.stdout + proc.stderr[-3000:]
    (line,) = proc.stderr.strip().splitlines()
    assert f"inventory {testbed.inventory}: " in line and "(az1-client): clients.confluent_kafka 1.9.2: no wheel for " \
           "Python 3.11 on x86_64 (glibc 2.36) on PyPI (the first version that has one is 2.0.2" in line, line
    assert not (tmp_path / "results").exists()  # refused before any run folder
    nothing_of_runs_left(testbed)


def test_smoke_over_ssh_runs_producers_and_consumers_on_the_hosts_venv_of_the_client_under_test(
        testbed: SshTestBed, tmp_path: Path) -> None:
    spec = smoke(tmp_path, CLIENT, [{"at": 8, "fault": "upgrade-client", "process": "producer-az1-0",
                                     "to_version": UPGRADE, "name": "up"}])
    proc = faultline("run", str(spec), "--inventory", str(testbed.inventory), "--known-hosts",
                     str(testbed.known_hosts), "--results", str(tmp_path / "results"), timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = run_dir_of(tmp_path / "results", "smoke")
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["valid"] is True and verdict["stats"]["ok"] >= 3000, verdict.get("stats")
    client_az1 = next(a for a, r in testbed.roles.items() if r == ("az1", "client"))
    host_python = testbed.exec(client_az1, "python3 -c 'import platform; print(platform.python_version())'").strip()
    run = json.loads((run_dir / "run.json").read_text())  # as the hosts' venvs report themselves: the host's Python
    assert run["versions"]["client_under_test"] == {"confluent_kafka": CLIENT, "librdkafka": CLIENT,
                                                    "python": host_python}, run["versions"]
    processes = pd.read_parquet(run_dir / "history" / "processes.parquet")
    used = {row.process: json.loads(row.config)["client"] for row in processes.itertuples()}
    (done,) = [json.loads(row["detail"]) for row in map(json.loads, (run_dir / "journal" / "nemesis.jsonl")
               .read_text().splitlines()) if row.get("fault") == "upgrade-client" and row.get("detail")
               and "client" in json.loads(row["detail"])]
    assert done["client"]["confluent_kafka"] == UPGRADE and done["client"]["python"] == host_python, done
    under_test = f"confluent-kafka {CLIENT} / librdkafka {CLIENT}"  # what each process itself loaded, on its host
    upgraded = f"confluent-kafka {UPGRADE} / librdkafka {done['client']['librdkafka']}"
    own = f"confluent-kafka {run['versions']['confluent_kafka']} / librdkafka {run['versions']['librdkafka']}"
    assert used["producer-az1-0-u1"] == upgraded, used  # the rolled producer, on the host's venv of UPGRADE
    assert {p for p, c in used.items() if c == under_test} == \
        {p for p in used if p.startswith(("producer", "consumer")) and p != "producer-az1-0-u1"}, used
    assert all(c == own for p, c in used.items() if p.startswith("drain")), used  # the harness's own client
    log = (run_dir / "harness.log").read_text()
    for version in (CLIENT, UPGRADE):
        assert f"installing confluent-kafka {version} on az1-client" in log, version
        marker = testbed.exec(client_az1, f"cat /var/lib/faultline/cache/venv-ck-{version}-*/faultline-client.json")
        assert json.loads(marker)["python"] == host_python and json.loads(marker)["confluent_kafka"] == version
    nothing_of_runs_left(testbed)

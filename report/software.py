"""The software a run used, for the report's Configuration card: run.json's `versions` as lines a reader can weigh.

Kafka (its Scala build), ZooKeeper and Java on the nodes; the harness's own client (confluent-kafka, librdkafka,
Python: its drains and checks); and the client under test where the spec names one (`clients.confluent_kafka`),
as its venv reported itself, with each client host's own report where the hosts' Pythons differ (ssh: `by_host`,
from the venv each host made, harness.manifest.hosts_client).
Must never: judge anything, or read a file but run.json.
"""

from __future__ import annotations

from typing import Any

from report.loaded_run import Run, load_json_object
from testbed.runfolder import RunFolder


def software_rows(run: Run) -> list[tuple[str, str]]:
    """(what, versions) rows from run.json's `versions`; [] when the run has none (or it cannot be read)."""
    manifest = load_json_object(RunFolder(run.run_dir).manifest, run.problems) or {}
    versions = manifest.get("versions")
    if not isinstance(versions, dict):
        return []
    rows = []
    if versions.get("kafka"):
        nodes = f"Kafka {versions['kafka']}" + (f" (Scala {versions['kafka_scala']})"
                                               if versions.get("kafka_scala") else "")
        nodes += "".join(f", {label} {versions[key]}" for key, label in (("zookeeper", "ZooKeeper"), ("java", "Java"))
                         if versions.get(key))
        rows.append(("nodes", nodes))
    if versions.get("confluent_kafka"):
        rows.append(("the harness's client", _client(versions)))
    under = versions.get("client_under_test")
    if isinstance(under, dict):
        rows.append(("client under test", _client(under)))
        for host, seen in sorted((under.get("by_host") or {}).items()):
            if isinstance(seen, dict):
                rows.append((f"client under test on {host}", _client(seen)))
    if versions.get("faultline"):
        rows.append(("faultline", str(versions["faultline"]) + (f" ({manifest['commit']})"
                                                               if manifest.get("commit") else "")))
    return rows


def _client(versions: dict[str, Any]) -> str:
    """'confluent-kafka 2.10.1 / librdkafka 2.10.1, Python 3.11.2' from what a venv reported."""
    text = f"confluent-kafka {versions.get('confluent_kafka', '?')} / librdkafka {versions.get('librdkafka', '?')}"
    return text + (f", Python {versions['python']}" if versions.get("python") else "")

"""The report's Configuration card beside the spec: each client process with its settings and counts, and the
software the run used.

The clients come from the history (the processes table's `config`, and the writes and reads of processes it does
not name). The software is run.json's `versions` as lines a reader can weigh: Kafka (its Scala build), ZooKeeper
and Java on the nodes; the harness's own client (confluent-kafka, librdkafka, Python: its drains and checks); and
the client under test where the spec names one (`clients.confluent_kafka`), as its venv reported itself, with each
client host's own report where the hosts' Pythons differ (ssh: `by_host`, harness.manifest.hosts_client).
Must never: judge anything, or read a file but run.json (report.loaded_run reads the history).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from checkers.leadership import natural_key
from report import fmt
from report.loaded_run import Run, load_json_object, parse_json
from testbed.runfolder import RunFolder

KNOWN_SETTINGS = ("acks", "enable.idempotence", "max.in.flight.requests.per.connection", "retries",
                  "isolation.level", "enable.auto.commit", "group.id")
ROLE_ORDER = {"producer": 0, "consumer": 1, "drain": 2}


def client_rows(run: Run) -> dict[str, Any]:
    """The Clients table: each process (role, AZ), the settings that decide the verdict, and what it wrote or read."""
    processes = run.table("processes")
    writes, reads = run.table("writes"), run.table("reads")
    configs: dict[str, dict[str, Any]] = {}
    info: dict[str, tuple[str, str]] = {}
    for process, role, az, config in processes[["process", "role", "az", "config"]].itertuples(index=False):
        if process is None:
            continue
        parsed = parse_json(config)
        configs[process] = parsed if isinstance(parsed, dict) else {}
        info[process] = (role or "", az or "")
    status_counts = writes.groupby(["process", "status"]).size()
    read_counts = reads.groupby("process").size()
    for process in set(writes["process"].dropna()) - set(info):
        info[process] = ("producer", _first(writes.loc[writes["process"] == process, "az"]))
    for process in set(reads["process"].dropna()) - set(info):
        info[process] = ("consumer", _first(reads.loc[reads["process"] == process, "az"]))
    keys = [k for k in KNOWN_SETTINGS if any(k in c for c in configs.values())]
    keys += sorted({k for c in configs.values() for k in c} - set(keys))
    rows = []
    for process in sorted(info, key=lambda p: (ROLE_ORDER.get(info[p][0], 9), natural_key(info[p][1]),
                                               natural_key(p))):
        role, az = info[process]
        config = configs.get(process, {})
        rows.append({
            "process": process, "role": role, "az": az,
            "settings": [fmt.compact(config[k]) if k in config else "" for k in keys],
            "ok": fmt.count(int(status_counts.get((process, "ok"), 0))) if role == "producer" else "",
            "fail": fmt.count(int(status_counts.get((process, "fail"), 0))) if role == "producer" else "",
            "info": fmt.count(int(status_counts.get((process, "info"), 0))) if role == "producer" else "",
            "reads": fmt.count(int(read_counts.get(process, 0))) if role != "producer" else "",
        })
    return {"keys": keys, "rows": rows}


def _first(values: pd.Series) -> str:
    present = values.dropna()
    return str(present.iloc[0]) if len(present) else ""


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

"""`cluster status`: what each broker itself believes, asked from inside its own host.

Read-only. A broker that cannot be asked is reported as such, not skipped.
"""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from testbed.errors import RuntimeFailure
from testbed.kafka import config as kcfg
from testbed.kafka.cluster import KafkaCluster
from testbed.kafka.kraft import quorum_views
from testbed.runtime.base import Runtime


def cluster_status(cluster: KafkaCluster, runtime: Runtime) -> dict[str, Any]:
    def ask(node: Any) -> dict[str, Any]:
        argv = [*cluster.software(node).python, "-m", "testbed.kafka.probe", node.address, str(kcfg.BROKER_PORT),
                node.address, str(kcfg.ZK_CLIENT_PORT), cluster.topic]
        try:
            proc = runtime.execute(node, argv, timeout=10.0)
            return dict(json.loads(proc.stdout))
        except (RuntimeFailure, json.JSONDecodeError, subprocess.SubprocessError) as exc:
            return {"broker": None, "broker_error": str(exc), "zookeeper_mode": "unknown"}

    with ThreadPoolExecutor(len(cluster.nodes)) as pool:
        answers = list(pool.map(ask, cluster.nodes))
    brokers = []
    quorum = []
    kraft_views = quorum_views(cluster) if cluster.settings.kraft else {}
    for node, answer in zip(cluster.nodes, answers, strict=True):
        pids = cluster.pids(node)
        view = answer.get("broker") or {}
        brokers.append({
            "broker": node.broker_id, "node": node.name, "az": node.az,
            "address": f"{node.address}:{kcfg.BROKER_PORT}",
            "alive": pids["broker"] is not None and bool(view), "pid": pids["broker"],
            "controller": view.get("controller"),
            "partitions": [{"partition": p["partition"], "leader": p["leader"], "isr": p["isr"],
                            "leader_epoch": p["leader_epoch"], "replicas": p["replicas"]}
                           for p in (view.get("partitions") or {}).get(cluster.topic, [])],
            **({"error": answer["broker_error"]} if "broker_error" in answer else {}),
        })
        if cluster.settings.kraft:  # the KRaft controller's own DescribeQuorum answer: leading or not
            q = kraft_views.get(node.name)
            quorum.append({"server": kcfg.controller_id(cluster.settings, node.broker_id), "node": node.name,
                           "pid": pids[cluster.roles[0]], "address": f"{node.address}:{kcfg.CONTROLLER_PORT}",
                           "mode": "down" if q is None else f"leader (epoch {q.leader_epoch})" if q.leading
                           else "follower"})
            continue
        quorum.append({"server": node.index, "node": node.name, "pid": pids["zookeeper"],
                       "address": f"{node.address}:{kcfg.ZK_CLIENT_PORT}", "mode": answer.get("zookeeper_mode")})
    return {"prefix": runtime.prefix, "run_dir": str(cluster.run_dir), "topic": cluster.topic,
            "bootstrap_servers": cluster.bootstrap, "zookeeper_connect": cluster.zk_connect,
            "brokers": brokers, "zookeeper": quorum,
            "quorum": "KRaft controllers" if cluster.settings.kraft else "zookeeper"}


def format_status(status: dict[str, Any]) -> str:
    lines = [f"cluster {status['prefix']}  run dir {status['run_dir']}",
             f"bootstrap servers: {status['bootstrap_servers']}",
             f"{status.get('quorum', 'zookeeper')}: " + ", ".join(f"{z['node']} {z['mode']}" for z in status["zookeeper"])]
    for b in status["brokers"]:
        state = "alive" if b["alive"] else "DOWN"
        lines.append(f"broker {b['broker']} ({b['az']}, {b['address']}) {state}; controller as it sees it: "
                     f"{b['controller']}")
        for p in b["partitions"]:
            lines.append(f"  {status['topic']}-{p['partition']}: leader {p['leader']} isr {p['isr']} "
                         f"epoch {p['leader_epoch']}")
        if "error" in b:
            lines.append(f"  cannot ask it: {b['error']}")
    return "\n".join(lines)

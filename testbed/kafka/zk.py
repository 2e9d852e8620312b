"""ZooKeeper's record of the cluster: registered brokers, the controller, each partition's state.

This is the authority the controller writes to; comparing it with what each
broker believes is how the harness sees stale views. Read-only.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from testbed.errors import ClusterError

logging.getLogger("kazoo").setLevel(logging.CRITICAL)


def zk_snapshot(connect: str, topic: str | None = None, timeout: float = 5.0) -> dict[str, Any]:
    """{'brokers': [ids], 'controller': id|None, 'partitions': {p: {leader, isr, leader_epoch}}}."""
    with zk_session(connect, timeout) as zk:
        return read_snapshot(zk, connect, topic)


@contextlib.contextmanager
def zk_session(connect: str, timeout: float = 5.0) -> Iterator[KazooClient]:
    """One ZooKeeper session for several reads (`read_snapshot`); ClusterError if none within `timeout`."""
    zk = KazooClient(hosts=connect, timeout=timeout, read_only=False)
    try:
        zk.start(timeout=timeout)
    except KazooTimeoutError as exc:
        zk.close()
        raise ClusterError(f"ZooKeeper at {connect} did not answer within {timeout:.0f} s") from exc
    try:
        yield zk
    finally:
        zk.stop()
        zk.close()


def read_snapshot(zk: KazooClient, connect: str, topic: str | None = None) -> dict[str, Any]:
    """`zk_snapshot` through an open session."""
    try:
        snap: dict[str, Any] = {"brokers": sorted(int(b) for b in _children(zk, "/brokers/ids"))}
        snap["controller"] = _json(zk, "/controller").get("brokerid")
        snap["partitions"] = {}
        if topic is not None:
            for p in sorted(int(x) for x in _children(zk, f"/brokers/topics/{topic}/partitions")):
                state = _json(zk, f"/brokers/topics/{topic}/partitions/{p}/state")
                snap["partitions"][p] = {"leader": state.get("leader"), "isr": state.get("isr"),
                                         "leader_epoch": state.get("leader_epoch")}
        return snap
    except KazooException as exc:
        raise ClusterError(f"ZooKeeper at {connect}: {type(exc).__name__}: {exc}") from exc


def _children(zk: KazooClient, path: str) -> list[str]:
    try:
        return list(zk.get_children(path))
    except NoNodeError:
        return []


def _json(zk: KazooClient, path: str) -> dict[str, Any]:
    try:
        data, _ = zk.get(path)
    except NoNodeError:
        return {}
    return dict(json.loads(data.decode())) if data else {}

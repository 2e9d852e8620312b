"""`python -m testbed.kafka.probe HOST PORT ZKHOST ZKPORT [TOPIC...]`: one node's own view, as JSON.

Run inside a node's host (through the runtime), so what it reports is what that
node can see, whatever faults are in place.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from checkers.verdict import EXIT_FAILED
from testbed.kafka.wire import broker_view, zookeeper_mode


def probe(host: str, port: int, zk_host: str, zk_port: int, topics: list[str] | None) -> dict[str, object]:
    result: dict[str, object] = {"zookeeper_mode": zookeeper_mode(zk_host, zk_port)}
    try:
        result["broker"] = asdict(broker_view(host, port, topics))
    except (OSError, ConnectionError, ValueError) as exc:
        result["broker"] = None
        result["broker_error"] = f"{type(exc).__name__}: {exc}"
    return result


def main(argv: list[str]) -> int:
    if len(argv) < 4 or not argv[1].isdigit() or not argv[3].isdigit():
        print("usage: python -m testbed.kafka.probe HOST PORT ZKHOST ZKPORT [TOPIC...]", file=sys.stderr)
        return EXIT_FAILED
    host, port, zk_host, zk_port, *topics = argv
    print(json.dumps(probe(host, int(port), zk_host, int(zk_port), topics or None)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

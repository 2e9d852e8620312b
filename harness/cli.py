"""`python -m harness` (also `faultline`): the command line.

Every HarnessError becomes one line on stderr and exit status 3 (DESIGN.md's
contract); bad options are HarnessErrors too.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import NoReturn

from harness.errors import HarnessError, UsageError
from harness.kafka.config import ClusterSettings
from harness.kafka.dist import DEFAULT_VERSION
from harness.lifecycle import cluster_from_state, live_active_cluster, provision, require_root, tear_down
from harness.runtime.netns import clean_leftovers
from harness.paths import ACTIVE_FILE
from harness.status import cluster_status, format_status

log = logging.getLogger("faultline")


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> Parser:
    parser = Parser(prog="faultline", description="Break a real Kafka cluster on purpose and check what it kept.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    cluster = sub.add_parser("cluster", help="bring a cluster up, show it, take it down")
    csub = cluster.add_subparsers(dest="action", required=True, parser_class=Parser)
    up = csub.add_parser("up", help="start a cluster and return once it is ready; it keeps running")
    up.add_argument("--nodes", type=int, default=3)
    up.add_argument("--run-dir", type=Path)
    up.add_argument("--network", default="198.18.0.0/24")
    up.add_argument("--kafka-version", default=DEFAULT_VERSION)
    up.add_argument("--partitions", type=int, default=3)
    status = csub.add_parser("status", help="each broker's own view, the quorum, bootstrap servers")
    status.add_argument("--json", action="store_true")
    csub.add_parser("down", help="stop the running cluster and remove everything it made")
    sub.add_parser("clean", help="remove everything a killed harness left behind")
    return parser


def active_run_dir() -> Path:
    current = live_active_cluster()
    if current is None:
        raise UsageError("no cluster is running (nothing recorded in "
                         f"{ACTIVE_FILE}); start one with 'python -m harness cluster up'")
    return Path(current["run_dir"])


def cmd_cluster(args: argparse.Namespace) -> int:
    if args.action == "up":
        settings = ClusterSettings(nodes=args.nodes, network=args.network, kafka_version=args.kafka_version,
                                   partitions=args.partitions)
        started = time.monotonic()
        with provision(settings, args.run_dir, keep=True) as (cluster, runtime):
            print(f"cluster {runtime.prefix} ready in {time.monotonic() - started:.1f} s; "
                  f"bootstrap servers {cluster.bootstrap}; run dir {cluster.run_dir}")
        return 0
    run_dir = active_run_dir()
    if args.action == "status":
        cluster, runtime = cluster_from_state(run_dir)
        status = cluster_status(cluster, runtime)
        print(json.dumps(status, indent=2) if args.json else format_status(status))
        return 0
    started = time.monotonic()
    tear_down(run_dir)
    print(f"cluster down in {time.monotonic() - started:.1f} s (run dir {run_dir})")
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    removed = clean_leftovers()
    ACTIVE_FILE.unlink(missing_ok=True)
    print("\n".join(["removed:", *removed]) if removed else "nothing to clean")
    return 0


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    try:
        args = build_parser().parse_args(argv)
        require_root()
        handler = {"cluster": cmd_cluster, "clean": cmd_clean}[args.command]
        return handler(args)
    except HarnessError as exc:
        print(f"faultline: {exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        print("faultline: interrupted; everything this run made was removed", file=sys.stderr)
        return 130

"""`python -m harness` (also `python -m faultline` and `faultline`): the command line.

Every HarnessError becomes one line on stderr and exit status 3 (DESIGN.md's
contract); bad options are HarnessErrors too. Every path a user types is made
absolute here, at the edge, against the directory it was typed in: the
processes the harness starts elsewhere (in a namespace, in a container) and
the state file never see a relative path.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NoReturn

from harness.console import quiet_console
from harness.runfolders import find_runs
from harness.spec_keys import CHECKERS
from testbed.dist.kafka import DEFAULT_VERSION
from testbed.dist.versions import METADATA_MODES, check_metadata, default_metadata
from testbed.errors import HarnessError, UsageError
from testbed.handover import hand_over
from testbed.kafka.config import ClusterSettings
from testbed.lifecycle import (
    TerminationRequested,
    check_can_provision,
    cluster_from_state,
    live_active_cluster,
    provision,
    require_root,
    tear_down,
)
from testbed.machine import REAL, Machine
from testbed.paths import ACTIVE_FILE, REPO_ROOT
from testbed.runfolder import RunFolder
from testbed.runtime.base import PREFIX_RE
from testbed.runtime.factory import clean_leftovers
from testbed.runtime.kinds import (
    DEFAULT_KIND,
    KIND_NAMES,
    default_kind,
    default_network,
    inventory_kind,
    networks_text,
    runtime_help,
)
from testbed.status import cluster_status, format_status

log = logging.getLogger("faultline")
KEEP_DATA_HELP = ("keep each node's Kafka and ZooKeeper data folders (by default they go once the replicas are "
                  "dumped: preallocated index and log files make a run folder look hundreds of MB)")


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # The CLI prints "faultline: " before every error: name only the subcommand here.
        where = self.prog.removeprefix("faultline").strip()
        raise UsageError(f"{where}: {message}" if where else message)


class VersionAction(argparse.Action):
    """`--version`: faultline and the software a run will use (harness.versions owns the facts)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print faultline's version and the Kafka, librdkafka and confluent-kafka it uses")

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> NoReturn:
        from harness.versions import commit, software_versions

        v, head = software_versions(), commit()
        print(f"faultline {v['faultline']}" + (f" (commit {head})" if head else ""))
        print(f"Kafka {v['kafka']} (the default; a spec's cluster.kafka_version may choose another)")
        print(f"librdkafka {v['librdkafka']}\nconfluent-kafka {v['confluent_kafka']}\nPython {v['python']}")
        parser.exit(0)


def build_parser() -> Parser:
    parser = Parser(prog="faultline", description="Break a real Kafka cluster on purpose and check what it kept.")
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    cluster = sub.add_parser("cluster", help="bring a cluster up, show it, take it down")
    csub = cluster.add_subparsers(dest="action", required=True, parser_class=Parser)
    up = csub.add_parser("up", help="start a cluster and return once it is ready; it keeps running")
    up.add_argument("--nodes", type=int, default=3)
    up.add_argument("--run-dir", type=Path)
    up.add_argument("--network", help="the hosts' network (default: the runtime's, " + networks_text() + ")")
    up.add_argument("--kafka-version", default=DEFAULT_VERSION)
    up.add_argument("--metadata", choices=METADATA_MODES, help="zookeeper or kraft (default: kraft from 4.0, else "
                    "zookeeper)")
    up.add_argument("--partitions", type=int, default=3)
    up.add_argument("--controller", type=int, metavar="BROKER",
                    help="the broker that must be controller once the cluster is up (started first; default: any)")
    up.add_argument("--runtime", choices=KIND_NAMES,
                    help=runtime_help(f"the inventory's with --inventory, else {DEFAULT_KIND}"))
    add_ssh_flags(up)
    status = csub.add_parser("status", help="each broker's own view, the quorum, bootstrap servers")
    status.add_argument("--json", action="store_true")
    csub.add_parser("down", help="stop the running cluster and remove everything it made")
    clean = sub.add_parser("clean", help="remove everything a killed harness left behind")
    add_ssh_flags(clean, "clean these ssh hosts (only them) instead of this machine")
    clean.add_argument("--prefix", help="only what the run with this prefix left (fl + 6 hex digits, as in its run "
                       "folder's run.json and its namespaces' and containers' names); without it, every run's, live "
                       "runs' included")
    run = sub.add_parser("run", help="run spec files (every configuration, or one) and judge them; several "
                         "files run in turn in one process, each with its own results folder and junit.xml")
    run.add_argument("spec", type=Path, nargs="+")
    run.add_argument("--configuration", action="append",
                     help="run only this configuration of the spec (of each, with several files); repeat for more")
    run.add_argument("--engine", choices=CHECKERS, help="checker engine (default: the spec's, auto unless it names one)")
    run.add_argument("--results", type=Path, help="results folder (default: results/)")
    run.add_argument("--runtime", choices=KIND_NAMES, help=runtime_help(f"the spec's, else {DEFAULT_KIND}"))
    run.add_argument("--keep-data", action="store_true", help=KEEP_DATA_HELP)
    run.add_argument("--kafka-version", help="the Kafka version of every run, 0.10.2.2 to 4.x (default: each "
                     "spec's cluster.kafka_version; docs/runtimes.md, \"Kafka versions\")")
    run.add_argument("--metadata", choices=METADATA_MODES, help="the metadata mode of every run: zookeeper or "
                     "kraft (default: each spec's cluster.metadata; docs/runtimes.md, \"KRaft\")")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="sets",
                     help="replace a key of every spec and configuration, e.g. settle_timeout_s=45, "
                     "cluster.partitions=6, workloads.producers[0].settings.acks=1 or [*] for every entry (the "
                     "value is read as YAML); repeat for more")
    run.add_argument("--dry-run", action="store_true", help="print what the run would do to each host (fault rules "
                     "and their ports, commands, topic) and stop: nothing is connected to, created or changed")
    add_ssh_flags(run)
    campaign = sub.add_parser("campaign", help="run a campaign (scenarios, random-chaos seeds, matrix sweeps) "
                              "within a time budget; failures run again once (FLAKE or REGRESSION)")
    campaign.add_argument("campaign", help="a campaign file, e.g. campaigns/nightly.yaml; or `merge` then the "
                          "shards' folders: join the shards of one plan into one campaign")
    campaign.add_argument("shard_dirs", type=Path, nargs="*", metavar="DIR",
                          help="with merge: each shard's campaign folder (or a folder holding them)")
    campaign.add_argument("--shard", metavar="I/N", help="run only share I of the plan split N ways (balanced by "
                          "expected run time); the budget applies to this share")
    campaign.add_argument("--out", type=Path, help="with merge: the merged campaign's folder (default: "
                          "RESULTS/campaigns/<timestamp>/)")
    campaign.add_argument("--budget", help="wall time for the runs, e.g. 60m or 1h30m (default: the file's budget)")
    campaign.add_argument("--seed", type=int, help="seeds and order of this campaign (default: from the date)")
    campaign.add_argument("--results", type=Path, help="results folder (default: results/); the campaign goes "
                          "into RESULTS/campaigns/<timestamp>/")
    campaign.add_argument("--lake", type=Path, help="the results lake (default: results/lake/)")
    campaign.add_argument("--resume", type=Path, action="append", default=[], metavar="LAKE", help="plan only the "
                          "runs its runs in LAKE (repeatable) lack, and those a flake in its window owes: run in parts")
    campaign.add_argument("--engine", choices=CHECKERS, help="checker engine (default: the file's, "
                          "else each spec's)")
    campaign.add_argument("--runtime", choices=KIND_NAMES, help=runtime_help("each spec's"))
    campaign.add_argument("--kafka-version", help="the Kafka version of every run (default: each spec's)")
    campaign.add_argument("--plan", action="store_true", help="print the runs in order, when each would start "
                          "and what the budget would leave out; run nothing")
    campaign.add_argument("--overhead", type=float, help="seconds a run takes on top of its duration until one is "
                          "measured; with --plan, for every run (default: 30)")
    recover = sub.add_parser("recover", help="finish and judge a run whose harness was killed")
    recover.add_argument("run_dir", type=Path)
    recover.add_argument("--engine", choices=CHECKERS)
    recover.add_argument("--keep-data", action="store_true", help=KEEP_DATA_HELP)
    report = sub.add_parser("report", help="regenerate report.html (and junit.xml) of a finished run "
                            "(a run folder, a scenario's timestamp or latest folder, or the scenario's folder)")
    report.add_argument("run_dir", type=Path)
    show = sub.add_parser("show", help="print a finished run's verdict summary (each configuration's, for a "
                          "timestamp or latest folder of a spec with several)")
    show.add_argument("run_dir", type=Path)
    sub.add_parser("list", help="list the scenarios, one line each")
    compose = sub.add_parser("compose", help="write a spec's cluster as a Compose project, to bring up by hand")
    compose.add_argument("spec", type=Path)
    compose.add_argument("--configuration", help="the configuration whose cluster to write (needed when they differ)")
    compose.add_argument("-o", "--output", type=Path, required=True, help="the project's folder (created)")
    return parser


def absolute_paths(args: argparse.Namespace) -> argparse.Namespace:
    """Every path argument made absolute (symlinks such as `latest` resolved: a run is known by its real folder)."""
    for name, value in vars(args).items():
        if isinstance(value, Path):
            setattr(args, name, value.resolve())
    return args


def add_ssh_flags(parser: argparse.ArgumentParser, inventory_help: str = "") -> None:
    parser.add_argument("--inventory", type=Path, help=inventory_help or "the hosts of an inventory (YAML): an ssh one "
                        "implies --runtime ssh, a Docker one (containers of yours) --runtime docker-existing; see "
                        "docs/runtimes.md")
    parser.add_argument("--known-hosts", type=Path, help="check the ssh hosts' keys against this known_hosts file "
                        "(default: trust on first use, the keys kept in the run folder)")


def active_run_dir() -> Path:
    current = live_active_cluster()
    if current is None:
        raise UsageError("no cluster is running (nothing recorded in "
                         f"{ACTIVE_FILE}); start one with 'python -m harness cluster up'")
    return Path(current["run_dir"])


def cmd_cluster(args: argparse.Namespace) -> int:
    from testbed.docker_inventory import load_any_inventory

    if args.action == "up":
        name = args.runtime or (inventory_kind(args.inventory) if args.inventory else default_kind(inventory=False))
        if args.controller is not None and not 0 <= args.controller < args.nodes:
            raise UsageError(f"--controller {args.controller}: no broker {args.controller} in a cluster of "
                             f"{args.nodes} nodes (brokers 0-{args.nodes - 1})")
        metadata = args.metadata or default_metadata(args.kafka_version)
        check_metadata(args.kafka_version, metadata)
        settings = ClusterSettings(nodes=args.nodes, runtime=name, controller=args.controller, metadata=metadata,
                                   network=args.network or default_network(name),
                                   kafka_version=args.kafka_version, partitions=args.partitions,
                                   inventory=str(args.inventory.absolute()) if args.inventory else None,
                                   known_hosts=str(args.known_hosts.absolute()) if args.known_hosts else None,
                                   provision=args.inventory is None or load_any_inventory(args.inventory).provision)
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
    tear_down(cluster_from_state(run_dir)[0])
    hand_over(run_dir)
    print(f"cluster down in {time.monotonic() - started:.1f} s (run dir {run_dir})")
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    if args.prefix is not None and not PREFIX_RE.match(args.prefix):
        raise UsageError(f"--prefix {args.prefix!r}: not a run prefix (fl and 6 hex digits, e.g. fl3a9c01)")
    if args.inventory is not None:
        from testbed.kafka.existing_learn import clean_own_topics

        removed = clean_leftovers(args.prefix, inventory=str(args.inventory),
                                  known_hosts=args.known_hosts and str(args.known_hosts))
        removed += clean_own_topics(args.inventory, args.prefix)
    elif args.prefix is not None:  # one run's: its namespaces, processes, containers (Spark's daemons are nobody's run)
        removed = clean_leftovers(args.prefix)
    else:
        from spark_analysis.standalone import clean_orphaned_daemons

        removed = clean_leftovers() + clean_orphaned_daemons()
    if args.inventory is None or live_active_cluster() is None:
        ACTIVE_FILE.unlink(missing_ok=True)
    print("\n".join(["removed:", *removed]) if removed else "nothing to clean")
    return 0


def cmd_run(args: argparse.Namespace, machine: Machine = REAL) -> int:
    from checkers.api import missing_engine
    from harness.batch import run_batch
    from harness.preflight import screen
    from harness.spec import load_specs
    from harness.spec_sets import parse_sets

    sets = parse_sets(args.sets)
    batch = [load_specs(path, args.configuration, args.runtime, args.inventory, args.known_hosts,
                        args.kafka_version, args.metadata, sets)
             for path in args.spec]  # every file read and checked before anything starts
    for path, specs in zip(args.spec, batch, strict=True):
        for problem in filter(None, (missing_engine(args.engine or spec.checker) for spec in specs)):
            raise UsageError(f"{path}: {problem}")
    if args.dry_run:  # the screen and nothing else: no root needed, nothing touched
        print("\n\n".join(screen(path, specs) for path, specs in zip(args.spec, batch, strict=True) if specs))
        return 0
    require_root()  # after the specs: a bad spec is named to anyone, root or not
    for path, specs in zip(args.spec, batch, strict=True):  # bad input is refused before any run folder is written
        if specs and not specs[0].cluster.provision:  # a cluster of the user's: what will happen to it, first
            print(screen(path, specs), flush=True)
        for spec in specs:
            check_can_provision(spec.cluster, machine)
    try:
        return run_batch(batch, args.results, args.engine, sys.stdout, keep_data=args.keep_data, machine=machine)
    finally:  # whatever happened: Spark's JVM stopped (a judgement still under way after the grace ends with it)
        if "checkers.spark_session" in sys.modules:
            from checkers.spark_session import stop_session

            stop_session()


def cmd_campaign(args: argparse.Namespace) -> int:
    from campaign.command import Options, print_plan, run_campaign
    from campaign.shards import parse_shard

    if args.campaign == "merge":
        return cmd_campaign_merge(args)
    if args.shard_dirs or args.out:
        raise UsageError("campaign: one campaign file (DIR... and --out are for `harness campaign merge`)")
    options = Options(Path(args.campaign).resolve(), args.budget, args.seed, args.results, args.lake, args.engine,
                      args.runtime, args.kafka_version, args.overhead,
                      parse_shard(args.shard) if args.shard is not None else None, tuple(args.resume))
    if args.plan:
        print_plan(options)
        return 0
    return run_campaign(options).status


def cmd_campaign_merge(args: argparse.Namespace) -> int:
    from campaign.merge import MergeOptions, merge_campaign

    given = [flag for flag, value in (("--budget", args.budget), ("--seed", args.seed), ("--engine", args.engine),
                                      ("--runtime", args.runtime), ("--kafka-version", args.kafka_version),
                                      ("--plan", args.plan), ("--overhead", args.overhead), ("--shard", args.shard))
             if value not in (None, False)]
    if given:
        raise UsageError(f"campaign merge: {given[0]} is for running a campaign, not for merging its shards")
    return merge_campaign(MergeOptions([d.resolve() for d in args.shard_dirs], args.out, args.results, args.lake)).status


def cmd_recover(args: argparse.Namespace) -> int:
    from harness.recover import recover

    outcome = recover(args.run_dir, args.engine, keep_data=args.keep_data)
    print(summary_line(outcome.verdict, outcome.run_dir))
    return outcome.status


def summary_line(verdict: dict[str, object], run_dir: Path) -> str:
    """`recover`'s last line: the verdict line (report.verdict_view), then the stats and where the verdict is."""
    from report.verdict_view import verdict_line

    return f"{verdict_line(verdict)} | stats: {verdict.get('stats') or {}} | verdict {run_dir / 'verdict.json'}"


def cmd_report(args: argparse.Namespace) -> int:
    from harness.scenario import junit_of_folders
    from report import render_junit, render_report

    found = find_runs(args.run_dir)
    for run_dir in found.finished:
        print(render_junit(run_dir))
        print(render_report(run_dir))
    if found.several:
        print(junit_of_folders(found.top, found.finished, found.unfinished))
    hand_over(found.top)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from report import summary

    found = find_runs(args.run_dir)
    said = [summary(run_dir) for run_dir in found.finished]
    said += [f"{run_dir.name}: no verdict (its run did not finish: see {RunFolder(run_dir).harness_log})"
             for run_dir in found.unfinished]
    print("\n\n".join(said))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from harness.spec import load_spec_file

    for path in sorted((REPO_ROOT / "scenarios").glob("*.yaml")):
        raw = load_spec_file(path)
        first = str(raw.get("description", "")).strip().splitlines()
        confs = ", ".join(raw.get("configurations") or {}) or "default"
        print(f"{path.stem:32s} {first[0] if first else ''}  [{confs}]")
    return 0


def cmd_compose(args: argparse.Namespace) -> int:
    from harness.compose import COMPOSE_FILE, load_cluster, write_project

    cluster = load_cluster(args.spec, args.configuration)
    prefix = write_project(cluster, args.output)
    print(f"wrote {args.output / COMPOSE_FILE} (project {prefix}, spec {cluster.run_name}, "
          f"Kafka {cluster.settings.kafka_version}): cd {args.output} && docker compose up -d")
    return 0


def main(argv: list[str] | None = None, machine: Machine = REAL) -> int:
    """The command line; `harness run` makes its clusters on `machine` (a test's fake one, or this machine's)."""
    quiet_console()
    try:
        args = absolute_paths(build_parser().parse_args(argv))
        if args.command in ("cluster", "clean", "recover"):  # campaign: root is checked once its file is known good
            require_root()
        handlers: dict[str, Callable[[argparse.Namespace], int]] = {
            "cluster": cmd_cluster, "clean": cmd_clean, "run": partial(cmd_run, machine=machine),
            "recover": cmd_recover, "campaign": cmd_campaign,
            "report": cmd_report, "show": cmd_show, "list": cmd_list, "compose": cmd_compose}
        return handlers[args.command](args)
    except HarnessError as exc:
        print(f"faultline: {exc}", file=sys.stderr)
        return exc.exit_status
    except Exception as exc:  # a bug: keep the traceback, still exit with the harness-failure status
        traceback.print_exc()
        print(f"faultline: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("faultline: interrupted; everything this run made was removed", file=sys.stderr)
        return 130
    except TerminationRequested:
        print("faultline: terminated; everything this run made was removed", file=sys.stderr)
        return 143

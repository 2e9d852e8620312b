"""A run's folder: the one owner of every path in it (docs/reading-results.md, "A run and its results").

    RUN_DIR/spec.yaml  run.json  state.json  harness.log  verdict.json  replicas.json  report.html  junit.xml
            clocks.json  known_hosts                 (ssh runtime)
            journal/<process>.jsonl, journal/nemesis.jsonl
            history/<table>.parquet
            workloads/<process>.json          logs/<process>.log
            nodes/<node>/config/ zookeeper-data/ kafka-data/ logs/<role>/
                         replica-dump/<topic>-<p>.txt.gz  before-heal/<NN>-<fault>/<topic>-<p>/

Code that needs a path of a run asks a `RunFolder`; no other module spells
these names. Which folder is a run, and which run finished, is answered here too
(`is_run`, `finished`), for the harness's `show`/`report` and the results lake alike.
Nothing here writes to the disk but `make`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from checkers.verdict import VERDICT_FILE

NEMESIS_JOURNAL = "nemesis.jsonl"
MANIFEST_FILE = "run.json"  # harness.manifest writes it (docs/run-manifest.md)
ROLE_CONFIG = {"zookeeper": "zoo.cfg", "broker": "server.properties", "controller": "controller.properties"}
ROLE_DATA = {"zookeeper": "zookeeper-data", "broker": "kafka-data", "controller": "controller-data"}


@dataclass(frozen=True)
class NodeFolder:
    """The part of a run folder that belongs to one node host."""

    root: Path

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def config_dir(self) -> Path:
        return self.root / "config"

    def config(self, role: str) -> Path:
        return self.config_dir / ROLE_CONFIG[role]

    def log4j(self, role: str) -> Path:
        return self.config_dir / f"log4j-{role}.properties"

    def data(self, role: str) -> Path:
        return self.root / ROLE_DATA[role]

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    def logs(self, role: str) -> Path:
        return self.logs_dir / role

    def stdout(self, role: str) -> Path:
        return self.logs(role) / "stdout.log"

    def clock_offset(self, role: str) -> Path:
        """The offset a shifted clock adds to the role's process's wall clock (testbed.runtime.clocks)."""
        return self.root / "clock" / f"{role}.offset"

    @property
    def replica_dump_dir(self) -> Path:
        return self.root / "replica-dump"

    @property
    def before_heal_dir(self) -> Path:
        return self.root / "before-heal"

    def before_heal(self, label: str) -> Path:
        return self.before_heal_dir / label


@dataclass(frozen=True)
class RunFolder:
    root: Path

    def make(self) -> RunFolder:
        self.root.mkdir(parents=True, exist_ok=True)
        self.journal_dir.mkdir(parents=True, exist_ok=True)
        return self

    # -- what the folder is -----------------------------------------------------
    @property
    def is_run(self) -> bool:
        """Whether this folder is, or was meant to be, a run: it holds the spec.yaml a run writes first, or a
        run.json or verdict.json. Its inside (history/, nodes/, ...) never holds another run."""
        return any(p.is_file() for p in (self.spec, self.manifest, self.verdict))

    @property
    def finished(self) -> bool:
        """Whether the run reached a verdict (verdict.json exists). A run whose harness failed has none: it
        ended (its run.json says `error`) but did not finish."""
        return self.verdict.is_file()

    # -- files at the top -------------------------------------------------------
    @property
    def spec(self) -> Path:
        return self.root / "spec.yaml"

    @property
    def state(self) -> Path:
        return self.root / "state.json"

    @property
    def harness_log(self) -> Path:
        return self.root / "harness.log"

    @property
    def verdict(self) -> Path:
        return self.root / VERDICT_FILE

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST_FILE

    @property
    def replicas(self) -> Path:
        return self.root / "replicas.json"

    @property
    def report(self) -> Path:
        return self.root / "report.html"

    @property
    def junit(self) -> Path:
        return self.root / "junit.xml"

    @property
    def clocks(self) -> Path:
        """Each host's clock against the harness's, at the start and the end (runtimes on other machines)."""
        return self.root / "clocks.json"

    @property
    def existing_cluster(self) -> Path:
        """A cluster faultline did not make (`provision: false`): what the run learned of it (testbed.kafka.existing)."""
        return self.root / "existing-cluster.json"

    @property
    def known_hosts(self) -> Path:
        """The host keys first seen (the ssh runtime's trust-on-first-use)."""
        return self.root / "known_hosts"

    # -- what the clients and the nemesis record ---------------------------------
    @property
    def journal_dir(self) -> Path:
        return self.root / "journal"

    def journal(self, process: str) -> Path:
        return self.journal_dir / f"{process}.jsonl"

    @property
    def nemesis_journal(self) -> Path:
        return self.journal_dir / NEMESIS_JOURNAL

    @property
    def history_dir(self) -> Path:
        return self.root / "history"

    def table(self, name: str) -> Path:
        return self.history_dir / f"{name}.parquet"

    def workload_config(self, process: str) -> Path:
        return self.root / "workloads" / f"{process}.json"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    def client_log(self, process: str) -> Path:
        return self.logs_dir / f"{process}.log"

    # -- the nodes ------------------------------------------------------------------
    @property
    def nodes_dir(self) -> Path:
        return self.root / "nodes"

    def node(self, name: str) -> NodeFolder:
        return NodeFolder(self.nodes_dir / name)

    def node_folders(self) -> list[NodeFolder]:
        """Every node folder present on disk, by name."""
        return [NodeFolder(p) for p in sorted(self.nodes_dir.glob("*")) if p.is_dir()]

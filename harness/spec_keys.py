"""Every key a spec may hold, where it may appear, its type, bounds, default and meaning: the one list.

`harness.spec` checks a spec against `SPEC` before it reads a single value
(top level, each configuration and each configuration's overrides alike), then
checks keys against each other; `harness.spec_schema` writes the same tree as
docs/spec.schema.json and as the key tables of docs/spec.md.

To add a key: add one entry to its section below (type, bounds, default, what
it means), read it in `harness.spec` (`cluster` keys become a
`ClusterSettings` field), then `make spec-docs` to regenerate the schema and
the tables (a test fails until they are current). A new fault kind or fault
key belongs to the nemesis: `nemesis.registry` and `nemesis.fault_schema.FAULT_KEYS`.

Must never: hold a check of one key against another (that is `harness.spec`'s).
"""

from __future__ import annotations

from checkers.anomalies import ANOMALIES
from checkers.facts import OBSERVED_FACTS
from checkers.schema import COMMIT_MODES  # contract v3's processes.commit
from harness.spec_types import (
    SETTING_VALUE,
    AnyOf,
    Bool,
    Choice,
    Custom,
    Int,
    ListOf,
    MapOf,
    Num,
    Scalar,
    Section,
    Str,
)
from nemesis.fault_schema import schedule_schema
from nemesis.schedule import parse_schedule
from testbed.dist.versions import METADATA_MODES
from testbed.kafka.config import ClusterSettings
from testbed.runtime.kinds import KIND_NAMES, networks_text
from testbed.runtime.unsynced import DISK_COUNTS
from workloads.config import AIM_LIMIT_S

_d = ClusterSettings()
CONSUMER_MODES = ("assign", "group")
KRAFT_CONTROLLERS = ("separate", "combined")
KRAFT_QUORUMS = ("static", "dynamic")
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
CHECKERS = ("auto", "spark", "pandas")  # auto: pandas or Spark by the history's size (checkers.auto)
AZ = Scalar(("string",), "an availability zone: az1, az2, ... up to the number of nodes",
            pattern=r"az[1-9]", pattern_text="an AZ name like az1")

CLUSTER = Section({
    "nodes": Int("nodes (AZs), each one ZooKeeper server and one broker, plus one client host per AZ",
                 _d.nodes, 3, 9),
    "runtime": Choice(KIND_NAMES, "where the hosts live (docs/runtimes.md); `--runtime` replaces it",
                      _d.runtime, what="runtime"),
    "kafka_version": Str("the Apache Kafka version, 0.10.2.2 to 4.x (its Scala build, ZooKeeper and Java "
                         "from the version table, docs/runtimes.md), fetched from Maven Central if not cached",
                         _d.kafka_version),
    "metadata": Choice(METADATA_MODES, "where the cluster's metadata lives: zookeeper (one ZooKeeper server per "
                       "node, Kafka up to 3.9) or kraft (one KRaft controller per node, Kafka 3.3 on; the only "
                       "choice from 4.0); default: kraft from 4.0, else zookeeper", what="metadata mode"),
    "kraft_controllers": Choice(KRAFT_CONTROLLERS, "KRaft: separate (a controller JVM beside each broker, in "
                                "place of ZooKeeper) or combined (each broker JVM is also a controller, "
                                "process.roles broker,controller)", _d.kraft_controllers,
                                what="controller layout"),
    "kraft_quorum": Choice(KRAFT_QUORUMS, "KRaft: static (controller.quorum.voters) or dynamic (KIP-853, Kafka 3.9 "
                           "on, separate controllers: controller.quorum.bootstrap.servers, every controller formatted "
                           "as an initial voter; what the remove-controller and add-controller faults need)",
                           _d.kraft_quorum, what="quorum kind"),
    "network": Str("the hosts' IPv4 network, e.g. 198.18.0.0/24 (default: the runtime's: "
                   + networks_text() + ")"),
    "topic": Str("the topic every client writes and reads (a transformer's output by default)", _d.topic),
    "extra_topics": ListOf(Str("a topic name"), doc="further topics made like `topic` (partitions, replication, "
                           "flush settings): created at bring-up, settled, observed, drained in every view and dumped "
                           "per topic; a producer group writes one with its `topic`, a transformer reads one as its "
                           "`input_topic` (default: none)"),
    "partitions": Int("the topic's partitions (with `replica_assignment`: its length, and must agree)",
                      _d.partitions, 1, 64),
    "replication_factor": Int("replicas per partition, at most `nodes` (with `replica_assignment`: "
                              "the length of each entry, and must agree)", _d.replication_factor, 1, 9),
    "min_insync_replicas": Int("the topic's min.insync.replicas, at most the replication factor",
                               _d.min_insync_replicas, 1, 9),
    "unclean_leader_election": Bool("unclean.leader.election.enable", _d.unclean_leader_election),
    "replica_lag_time_max_ms": Int("replica.lag.time.max.ms: how long a follower may lag before it leaves the ISR",
                                   _d.replica_lag_time_max_ms, 500),
    "zookeeper_session_timeout_ms": Int("zookeeper.session.timeout.ms: how long a cut-off broker keeps its "
                                        "session (and its partitions); KRaft: broker.session.timeout.ms, how "
                                        "long before the active controller fences it",
                                        _d.zookeeper_session_timeout_ms, 2000),
    "replica_assignment": ListOf(ListOf(Int("a broker id", low=0), min_items=1), min_items=1,
                                 text="a list of lists of broker ids",
                                 doc="broker ids per partition, preferred leader first, e.g. [[0, 1, 2]]; "
                                     "steers which broker leads (default: Kafka chooses)"),
    "broker_overrides": MapOf(SETTING_VALUE, "any other server.properties key of every broker, e.g. "
                                             "{log.flush.interval.messages: 1}", what="a mapping of "
                                             "server.properties keys to values"),
    "controller": Int("the broker that must be controller once the cluster is up (started first); KRaft: the "
                      "node whose KRaft controller must be the active one", low=0, high=8),
    "broker_heap_mb": Int("each broker's JVM heap", _d.broker_heap_mb, 128),
    "zookeeper_heap_mb": Int("each ZooKeeper server's (KRaft: separate controller's) JVM heap",
                             _d.zookeeper_heap_mb, 64),
    "inventory": Str("the ssh runtime's hosts: a YAML inventory file, relative to the spec's folder "
                     "(implies runtime ssh; `--inventory` replaces it; docs/runtimes.md)"),
    "known_hosts": Str("a known_hosts file the ssh hosts' keys are checked against, relative to the spec's folder "
                       "(default: trust on first use, the keys kept in the run folder)"),
    "flush_messages": Int("flush.messages / log.flush.interval.messages: fsync every N appended messages "
                          "(default: Kafka's, never; replication is the durability)", low=1),
    "flush_ms": Int("flush.ms / log.flush.interval.ms: fsync at least this often (default: Kafka's, never)", low=1),
    "log_dirs": Int("log directories per broker (JBOD, KIP-112): more than one puts dir-0 .. dir-N-1 in log.dirs, so "
                    "a disk fault can fail one (`log_dir`) while the broker serves the others' partitions",
                    _d.log_dirs, 1),
    "zookeeper_force_sync": Bool("ZooKeeper's forceSync: fsync its transaction log before acknowledging",
                                 _d.zookeeper_force_sync),
    "lose_unsynced_writes": Bool("the nodes' data directories on unsyncfs, so a power-off drops every write not "
                                 "fsynced (docs/unsyncfs.md); off: a power-off keeps the page cache (on ssh, a node host "
                                 "with neither FUSE nor a power command refuses a spec with power-offs while it is on)",
                                 _d.lose_unsynced_writes),
}, doc="the cluster: nodes, runtime, Kafka version, the topic and broker settings", title="cluster",
    nullable=True, ref="cluster")

CLIENT_SETTINGS = MapOf(SETTING_VALUE, "librdkafka settings (any property of librdkafka's CONFIGURATION.md for "
                                       "this role, checked by librdkafka when the spec is read)",
                        what="a mapping of librdkafka settings to values")

PRODUCER = Section({
    "azs": ListOf(AZ, min_items=1, one_for_list=True, doc="the AZs whose client hosts run these producers "
                                                           "(default: every AZ)"),
    "per_az": Int("producer processes in each of those AZs", 1, 1, 16),
    "rate": Num("sends per second of each process (0: as fast as it can)", 200, 0),
    "value_bytes": Int("pad each value to this many bytes (0: no padding)", 0, 0, 1_000_000),
    "topic": Str("the topic these producers write: the cluster's `topic` (the default) or one of its "
                 "`extra_topics` (a transformer's input, say)"),
    "transactional": Bool("each process a transactional producer (docs/history.md, contract v2): every send in "
                          "a transaction, its transactional.id `<run prefix>-<process>` kept across its restarts "
                          "(a new instance fences its zombie); needs acks all and idempotence (the default then)",
                          False),
    "txn_size": Int("transactional: sends per transaction, round-robin over the partitions", 10, 1, 10_000),
    "txn_abort_share": Num("transactional: the share of transactions deliberately aborted (after their sends "
                           "were written)", 0.0, 0, 1),
    "transaction_timeout_ms": Int("transactional: transaction.timeout.ms, after which the coordinator aborts an "
                                  "open transaction; the final drain waits this long after the producers stop",
                                  10000, 1000, 900000),
    "fenced": Choice(("renew", "exit"), "transactional: what a process does once fenced (a newer instance with "
                     "its transactional.id took over): renew (a new instance, as for any fatal error, which fences "
                     "the newer one in turn) or exit (it ends, exit status 0, as an application that knows it was "
                     "replaced; the run goes on without it)", "renew"),
    "proxy": Bool("connect through a request-holding proxy the process runs in its own host's loopback (the "
                  "brokers get a second listener, PROXIED, advertised there), so `hold-request` faults can hold "
                  "one of its requests (docs/scenarios.md, txn-delayed-endtxn); one such process per AZ; netns only",
                  False),
    "settings": CLIENT_SETTINGS,
}, doc="a group of producer processes, one value per send, each value unique in the run", title="a producer",
    ref="producer")

CONSUMER = Section({
    "azs": ListOf(AZ, min_items=1, one_for_list=True, doc="the AZs whose client hosts run these consumers "
                                                           "(default: every AZ)"),
    "per_az": Int("consumer processes in each of those AZs", 1, 1, 16),
    "mode": Choice(CONSUMER_MODES, "assign: every partition from the earliest offset, no group; "
                                   "group: subscribe as a member of `group`", "assign"),
    "group": Str("the consumer group (mode group only; default faultline-g<index>)"),
    "commit": Choice(COMMIT_MODES, "mode group (contract v3): before commits the offsets a poll returned "
                     "synchronously, then records them (at-most-once; nothing recorded from a poll whose commit "
                     "failed); after records, then commits synchronously (at-least-once); auto is librdkafka's "
                     "enable.auto.commit (offsets stored at poll); none never commits", "auto"),
    "processing_ms": Int("mode group: the processing time a kill may land in: before, between the commit and the "
                         "record (a skip); auto, between the poll (its offsets stored for the next automatic "
                         "commit) and the record (a skip if that commit came first); after and none, after the "
                         "record (a repeat)",
                         0, 0, 60_000),
    "kill_every_s": Num("SIGKILL one of these consumers' client processes this often, in turn, and start it again "
                        "(0: never), as a transformer's; with processing_ms, a kill that falls due outside the "
                        f"member's processing time waits for it (at most {AIM_LIMIT_S:g} s)", 0, 0),
    "kill_first_s": Num("when the first of those kills comes (default: `kill_every_s`)", low=0),
    "restart_delay_s": Num("how long a killed consumer stays down", 1.0, 0),
    "isolation_level": Choice(ISOLATION_LEVELS, "read_committed: records of open or aborted transactions are "
                              "skipped (librdkafka's default); read_uncommitted: every record", ISOLATION_LEVELS[0],
                              what="isolation level"),
    "settings": CLIENT_SETTINGS,
}, doc="a group of consumer processes reading while the run goes on (the `live` reads)", title="a consumer",
    ref="consumer")

TRANSFORMER_MODES = ("exactly-once", "at-least-once")
TRANSFORMER = Section({
    "azs": ListOf(AZ, min_items=1, one_for_list=True, doc="the AZs whose client hosts run these transformers "
                                                           "(default: every AZ)"),
    "per_az": Int("transformer processes in each of those AZs, all in one consumer group", 1, 1, 16),
    "input_topic": Str("the topic they read (one of the cluster's `extra_topics`, written by a producer group); "
                       "required"),
    "output_topic": Str("the topic they write one output per input to (default: the cluster's `topic`)"),
    "group": Str("their consumer group (default faultline-t<index>)"),
    "mode": Choice(TRANSFORMER_MODES, "exactly-once: the input offsets committed inside the output's transaction "
                   "(send_offsets_to_transaction); at-least-once: committed after the outputs were acknowledged, "
                   "no transaction", "exactly-once"),
    "batch": Int("most inputs per poll, and so per transaction", 20, 1, 10_000),
    "transaction_timeout_ms": Int("exactly-once: transaction.timeout.ms; the final drain waits this long after "
                                  "the transformers stop", 10000, 1000, 900000),
    "kill_every_s": Num("SIGKILL one transformer's client process this often, the group's members in turn, and "
                        "start it again (0: never): with three members the first at `kill_first_s`, the second "
                        "this much later, ...; each member every three times it", 0, 0),
    "kill_first_s": Num("when the first of those kills comes (default: `kill_every_s`)", low=0),
    "restart_delay_s": Num("how long a killed transformer stays down", 1.0, 0),
}, doc="a group of consume-transform-produce processes (docs/history.md, `source`): one output per input",
    title="a transformer", ref="transformer")

WORKLOADS = Section({
    "producers": ListOf(PRODUCER, min_items=1, doc="at least one"),
    "consumers": ListOf(CONSUMER, doc="none, one or more"),
    "transformers": ListOf(TRANSFORMER, doc="none, one or more groups"),
}, doc="the client processes (the final drain is the harness's own)", title="workloads", nullable=True,
    ref="workloads")



def _anomalies(doc: str) -> AnyOf:
    return AnyOf((Choice(("all",)), ListOf(Choice(ANOMALIES, what="anomaly"))), doc)


FAULT_OUTCOME = Section({
    "error": AnyOf((Int("a Kafka error code, e.g. 48", low=0), Str("")), "a fault that acts as a client: the Kafka "
                   "error its own request must get: a code (48) or its name (INVALID_TXN_STATE); 0 or NONE: the "
                   "request was taken"),
    "counted": Choice(DISK_COUNTS, "a disk fault: a kind of call its stop row must count at least once over its "
                      "nodes (delayed-fsync: a slow-disk fault's fsyncs that waited; enospc-write, eio-write...)"),
}, doc="what a fault must show: the answer to a client fault's request (`stray-transactional-produce`), or the calls "
    "a disk fault acted on; one of `error` and `counted`", title="expect.faults", ref="fault_outcome")
LOG_EVIDENCE = Section({
    "pattern": Str("a regular expression a log line must match"),
    "nodes": ListOf(Scalar(("string",), pattern=r"broker-\d+", pattern_text="a broker like broker-0"),
                    doc="the nodes whose logs are read (default: every node's)", one_for_list=True),
    "file": Choice(("server.log", "controller.log", "state-change.log", "stdout.log"),
                   "only the log files of this name (default: every log file of the node)"),
    "from": Str("the window's start: `run` (the story's start), `<fault name>.start` or `<fault name>.stop`, "
                "optionally +/- seconds (`kill-controller.start-5`); default: the log's first line"),
    "to": Str("the window's end, in the same words; default: the log's last line"),
    "appears": Bool("true: at least one line must match in the window; false: none may", True),
    "precondition": Bool("the line is the evidence that the run hit what it is about (a race window): without it "
                         "the run is INCONCLUSIVE, not failed (an anomaly `absent` forbids still fails it)", False),
    "says": Str("what the line shows, in the verdict's words (default: the pattern)"),
    "metadata": Choice(("zookeeper", "kraft"), "held only on a cluster of this metadata mode: a line one mode's "
                       "Kafka writes and the other's does not (the ZooKeeper controller's); default: both"),
}, doc="lines that must (or must not) appear in the nodes' logs within a window of the run", title="expect.logs",
    required=("pattern",), ref="log_evidence")

EXPECT = Section({
    "absent": _anomalies("anomalies whose count must be 0 (`all`: every one)"),
    "present": _anomalies("anomalies whose count must be > 0 (`all`: every one)"),
    "valid": AnyOf((Bool(""), Choice(("unknown",))), "the verdict's `valid` must be this; `unknown`: the run must end "
                   "unjudged (a stall the Kafka version is known for: the reason says what never came)"),
    "observed": ListOf(Choice(OBSERVED_FACTS, what="fact"), doc="facts the observations must show"),
    "reason": Scalar(("string",), "with `valid: unknown`: a regular expression the unknown verdict's reason must "
                     "match (the stalled partition, its leader and ISR), so an unknown for another cause fails"),
    "faults": MapOf(FAULT_OUTCOME, "per fault name of the timeline: the error its own request must get (a fault "
                    "that acts as a client), or a kind of call it acted on (a disk fault)",
                    what="a mapping of fault names to outcomes"),
    "logs": ListOf(LOG_EVIDENCE, doc="evidence lines in the nodes' logs (docs/spec.md, \"Evidence in the logs\")"),
}, doc="what the run must show for the scenario to pass", title="expect", nullable=True, ref="expect")

CLIENTS = Section({
    "confluent_kafka": Scalar(("string",), "the confluent-kafka version the producers and consumers under test run "
                              "(1.9.0 on, from PyPI, in a venv of its own on pyenv's Python 3.10; netns and docker; on "
                              "ssh each client host makes it with its own python3, from the version whose wheel fits "
                              "it, e.g. 2.0.2 on for Python 3.11); the drain, observers and admin keep the harness's "
                              "own (default: the harness's own)",
                              pattern=r"\d+\.\d+\.\d+", pattern_text="a version like 2.1.1"),
}, doc="the client under test", title="clients", nullable=True, ref="clients")

NEMESIS = Custom(parse_schedule, schedule_schema, "a list of fault events",
                 doc="the fault timeline (starts, stops, heals, random chaos); see the fault table", ref="nemesis")

SPEC = Section({
    "name": Scalar(("string",), "the scenario's name: results go to results/<name>/",
                   pattern=r"[A-Za-z0-9_-]+", pattern_text="an identifier like isolate-az-leader"),
    "description": Str("one line: what the scenario does (`faultline list` shows it)"),
    "notes": Str("prose: steering, mechanism, what runs on this cluster showed"),
    "seed": Int("seeds every random choice (random targets, random chaos)", 0, 0),
    "duration_s": Num("seconds the workloads run with the fault timeline", 20, 1, 86400),
    "settle_timeout_s": Num("at most this long for the healed cluster to settle (full ISRs, one leader)", 120, 1),
    "drain_timeout_s": Num("at most this long for the final drain", 90, 1),
    "zookeeper_only": Str("why this scenario's story exists only with ZooKeeper: a KRaft cluster "
                          "(cluster.metadata kraft, or Kafka 4) refuses it with this reason"),
    "checker": Choice(CHECKERS, "the checker engine (`--engine` replaces it); auto: pandas when the history "
                             "fits comfortably in memory, else Spark", "auto"),
    "cluster": CLUSTER,
    "clients": CLIENTS,
    "workloads": WORKLOADS,
    "nemesis": NEMESIS,
    "expect": EXPECT,
}, doc="a faultline spec (scenarios/*.yaml)", title="top level", required=("name",))

OVERRIDES = SPEC.without("name", doc="any top-level key but name and configurations, merged into the base spec "
                                     "(mappings merge key by key; lists and values replace)",
                         title="overrides", ref="overrides", nullable=True)
CONFIGURATION = Section({
    "description": Str("what this configuration is, or what its runs showed"),
    "overrides": OVERRIDES,
    "expect": EXPECT,
}, doc="one configuration: the base spec with its overrides, and its own expectation (else the top level's)",
    title="a configuration", nullable=True, ref="configuration")
SPEC.keys["configurations"] = MapOf(CONFIGURATION, "named configurations; a run runs each (or those "
                                                   "`--configuration` names)", what="a mapping of configuration "
                                                   "names to configurations")
SECTIONS: tuple[Section, ...] = (SPEC, CLUSTER, CLIENTS, WORKLOADS, PRODUCER, CONSUMER, TRANSFORMER, EXPECT,
                                 FAULT_OUTCOME, LOG_EVIDENCE, CONFIGURATION)

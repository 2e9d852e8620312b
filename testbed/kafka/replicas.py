"""Every broker's own copy of the test topic, read off its disk with Kafka's DumpLogSegments, and compared.

The final drain says what the leaders served; the replicas say what each
broker actually holds. After a run (the brokers stopped, the segment files
fetched from the hosts into `RUN_DIR/nodes/<node>/kafka-data/`), `kafka.tools.DumpLogSegments`
reads every segment of every replica, one JVM per partition, its output
streamed: parsed as it comes and kept gzipped per node and partition
(`nodes/<node>/replica-dump/<topic>-<partition>.txt.gz`), so memory grows
with one partition's records, never with the text. `replicas.json` records
per partition each replica's offsets, leader epochs and whether the replicas
hold the same value at every offset they share. Replicas of a settled cluster
agree; where they do not (a follower that was never truncated, a dump taken
after an unsettled end), the differing offsets and examples say where to
look.

Before each fault is undone, the nemesis copies every node's segments on its
host (`nodes/<node>/before-heal/<NN>-<fault>/`, `snapshot_segments`): what a
deposed leader or a broker about to restart held before it truncated. Those
copies are dumped too, and `replicas.json` says per node how many of their
records no replica holds at the end, with examples: where lost writes went.
Never writes into a broker's data directory; reads it (and copies from it)
only. DumpLogSegments before 2.2 prints, with --deep-iteration, one
`offset: N ... isvalid: B ... payload: V` line per record and no batch line (and
0.10.2 writes message format v1, which has no batches at all): those dumps give
values but no leader epochs (nor control records: transactions before 2.2 are
not told apart). The parser reads both forms.
"""

from __future__ import annotations

import contextlib
import gzip
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from checkers.anomalies import MAX_EXAMPLES, example_positions
from testbed.addressing import Host
from testbed.dist.classdata import archive_flags
from testbed.dist.kafka import classpath, java_for
from testbed.errors import RuntimeFailure
from testbed.files import write_json_atomic
from testbed.kafka.cluster import KafkaCluster
from testbed.runfolder import RunFolder

DUMP_CLASS = "kafka.tools.DumpLogSegments"
DUMP_TIMEOUT_S = 600.0
SNAPSHOT_LIMIT_BYTES = 256 << 20  # copying more would hold the heal back noticeably
# What all of a run's before-heal copies may hold: a soak's hundreds of faults would otherwise copy the growing
# segments hundreds of times (and dump each copy when judged). A short run never reaches it.
RUN_SNAPSHOT_BUDGET_BYTES = 1 << 30
BATCH_RE = re.compile(r"^baseOffset: .*?partitionLeaderEpoch: (-?\d+) .*?isControl: (\w+) .*?isvalid: (\w+)")
RECORD_RE = re.compile(r"^\| offset: (\d+) .*?(?: payload: (.*))?$")
# A record as DumpLogSegments before 2.2 prints it (any message format): a line of its own, no batch line.
MESSAGE_RE = re.compile(r"^offset: (\d+) .*?isvalid: (\w+).*?(?: payload: (.*))?$")


@dataclass
class Replica:
    """One node's copy of one partition: offset -> value, and the leader epochs its batches carry."""

    node: str
    values: dict[int, str | None] = field(default_factory=dict)
    epochs: set[int] = field(default_factory=set)
    invalid_batches: int = 0
    control_records: int = 0

    def summary(self) -> dict[str, Any]:
        offsets = self.values.keys()
        return {"records": len(self.values), "first_offset": min(offsets, default=None),
                "last_offset": max(offsets, default=None), "leader_epochs": sorted(self.epochs),
                "invalid_batches": self.invalid_batches, "control_records": self.control_records}


def spread(items: list[Any]) -> list[Any]:
    """Up to MAX_EXAMPLES of `items`, spread from the first to the last as the verdict's examples are.

    The first few of a truncated tail or of a run of differing offsets sit at
    the instant a fault began, and say little about the rest.
    """
    return [items[i] for i in example_positions(len(items), len(items), MAX_EXAMPLES)]


def segment_files(folder: RunFolder, topic: str, snapshot: str | None = None) -> dict[int, list[tuple[str, Path]]]:
    """partition -> (node, segment) for every segment of `topic` on every node, each node's in offset order.

    With `snapshot`, the segments of that before-heal snapshot instead of the data directories.
    """
    found: dict[int, list[tuple[str, Path]]] = {}
    for node in folder.node_folders():
        where = node.data("broker") if snapshot is None else node.before_heal(snapshot)
        for part_dir in sorted([*where.glob(f"{topic}-*"), *where.glob(f"dir-*/{topic}-*")], key=lambda p: p.name):
            suffix = part_dir.name[len(topic) + 1:]
            if suffix.isdigit():
                found.setdefault(int(suffix), []).extend(
                    (node.name, seg) for seg in sorted(part_dir.glob("*.log")))
    return found


SNAPSHOT_SCRIPT = """set -e
cd "$1"
total=$(du -cb "$2"-[0-9]*/*.log dir-*/"$2"-[0-9]*/*.log 2>/dev/null | tail -n 1 | cut -f 1)
total=${total:-0}
if [ "$total" -gt "$4" ]; then echo "skipped $total"; exit 0; fi
files=0
for d in "$2"-[0-9]* dir-*/"$2"-[0-9]*; do
  [ -d "$d" ] || continue
  p=$(basename "$d")
  mkdir -p "$3/$p"
  for f in "$d"/*.log; do [ -e "$f" ] && cp "$f" "$3/$p/" && files=$((files + 1)); done
done
echo "copied $total $files"
"""


def snapshot_segments(cluster: KafkaCluster, label: str, limit_bytes: int = SNAPSHOT_LIMIT_BYTES) -> dict[str, Any]:
    """Copy every node's segments of the topic, on its host, as they are now (before a fault is undone).

    A deposed leader truncates its divergent tail, and a restarted broker its
    unreplicated one, once the fault heals: the copy keeps what they held, for
    `dump_replicas` to hold against the end (it is fetched with the data).
    A node holding more than `limit_bytes` is skipped and said; one that cannot copy (a host without power)
    is said under `errors`. OSError if no node could copy.
    """
    def copy(node: Host) -> tuple[str, str]:
        f = cluster.node_folder(node)
        on_host = lambda path: cluster.runtime.host_path(node, path)  # noqa: E731
        try:
            out = cluster.runtime.execute(node, ["sh", "-c", SNAPSHOT_SCRIPT, "snapshot", on_host(f.data("broker")),
                                                 cluster.topic, on_host(f.before_heal(label)), str(limit_bytes)])
        except RuntimeFailure as exc:  # a host without power cannot copy: said, the others still copied
            return node.name, f"error {str(exc).splitlines()[-1][-200:]}"
        return node.name, out.stdout.strip()

    with ThreadPoolExecutor(len(cluster.nodes)) as pool:
        said = dict(pool.map(copy, cluster.nodes))
    copied = [s.split() for s in said.values() if s.startswith("copied")]
    skipped = {node: f"{s.split()[1]} bytes of segments, above the {limit_bytes} a snapshot copies"
               for node, s in said.items() if s.startswith("skipped")}
    out: dict[str, Any] = {"label": label, "files": sum(int(c[2]) for c in copied),
                           "bytes": sum(int(c[1]) for c in copied)}
    if skipped:
        out["skipped"] = "; ".join(f"{node}: {why}" for node, why in sorted(skipped.items()))
    failed = {node: s.removeprefix("error ") for node, s in said.items() if s.startswith("error ")}
    if failed and len(failed) == len(said):
        raise OSError("; ".join(f"{node}: {why}" for node, why in sorted(failed.items())))
    if failed:
        out["errors"] = failed
    return out


class SnapshotBudget:
    """`snapshot_segments` for one run, within RUN_SNAPSHOT_BUDGET_BYTES for all its copies: each copy takes at
    most SNAPSHOT_LIMIT_BYTES per node and each node's share of what is left (a node holding more is skipped and
    said, as above); once the budget is spent a snapshot copies nothing and says so. The undo goes ahead either way."""

    def __init__(self, cluster: KafkaCluster, budget_bytes: int = RUN_SNAPSHOT_BUDGET_BYTES,
                 copy: Callable[[KafkaCluster, str, int], dict[str, Any]] = snapshot_segments) -> None:
        self.cluster, self.budget_bytes, self.copy = cluster, budget_bytes, copy
        self.left = budget_bytes

    def __call__(self, label: str) -> dict[str, Any]:
        per_node = min(SNAPSHOT_LIMIT_BYTES, self.left // max(1, len(self.cluster.nodes)))
        if per_node <= 0:
            return {"label": label, "files": 0, "bytes": 0,
                    "skipped": f"the run's {self.budget_bytes} bytes of before-heal copies are spent"}
        out = self.copy(self.cluster, label, per_node)
        self.left -= int(out.get("bytes", 0))
        return out


def snapshot_labels(folder: RunFolder) -> list[str]:
    return sorted({d.name for node in folder.node_folders() if node.before_heal_dir.is_dir()
                   for d in node.before_heal_dir.iterdir() if d.is_dir()})


@contextlib.contextmanager
def dump_lines(files: list[Path], kafka_version: str) -> Iterator[Iterator[str]]:
    """DumpLogSegments over `files` in one JVM, its output as lines while it prints them.

    RuntimeError if it exits non-zero or is still at it after DUMP_TIMEOUT_S (then it is killed).
    """
    argv = [java_for(kafka_version), "-Xmx256m", *archive_flags(kafka_version, "broker"), "-cp", classpath(kafka_version), DUMP_CLASS,
            "--print-data-log", "--deep-iteration", "--files", ",".join(str(f) for f in files)]
    with tempfile.TemporaryFile("w+") as err, subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=err, text=True, errors="replace") as proc:
        assert proc.stdout is not None
        watchdog = threading.Timer(DUMP_TIMEOUT_S, proc.kill)
        watchdog.start()
        try:
            yield proc.stdout
        finally:
            watchdog.cancel()
            proc.stdout.close()
            code = proc.wait()
        if code != 0:
            err.seek(0)
            tail = " | ".join(err.read().strip().splitlines()[-3:]) or f"no output (killed after {DUMP_TIMEOUT_S:.0f} s?)"
            raise RuntimeError(f"{DUMP_CLASS} exited {code}: {tail}")


def parse_dump(lines: Iterable[str]) -> dict[Path, Replica]:
    """The records of each dumped file, by the file's path (its `Dumping <path>` header)."""
    out: dict[Path, Replica] = {}
    current: Replica | None = None
    control = False
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith("Dumping "):
            current = out.setdefault(Path(line[len("Dumping "):]), Replica(""))
        elif current is None:
            continue
        elif line.startswith("| offset: "):
            m = RECORD_RE.match(line)
            if m is None:
                continue
            if control:
                current.control_records += 1
            else:
                current.values[int(m.group(1))] = m.group(2)
        elif line.startswith("baseOffset: "):
            b = BATCH_RE.match(line)
            if b is None:
                continue
            current.epochs.add(int(b.group(1)))
            control = b.group(2) == "true"
            current.invalid_batches += b.group(3) != "true"
        elif line.startswith("offset: "):
            legacy = MESSAGE_RE.match(line)
            if legacy is None:
                continue
            current.values[int(legacy.group(1))] = legacy.group(3)
            current.invalid_batches += legacy.group(2) != "true"
    return out


def merge_segments(segments: Iterable[tuple[str, Path]], dumped: dict[Path, Replica]) -> dict[str, Replica]:
    """node -> the node's whole replica of one partition (its segments joined)."""
    merged: dict[str, Replica] = {}
    for node, path in segments:
        replica = merged.setdefault(node, Replica(node))
        part = dumped.get(path, Replica(node))
        replica.values.update(part.values)
        replica.epochs |= part.epochs
        replica.invalid_batches += part.invalid_batches
        replica.control_records += part.control_records
    return merged


def compare_replicas(topic: str, partition: int, replicas: dict[str, Replica],
                     final: dict[int, set[str]] | None = None) -> dict[str, Any]:
    """Whether the replicas hold the same value at every offset and end at the same offset.

    With `final` (offset -> the values the final drain read there), also how
    many offsets every replica holds that the drain never read, and how many
    the drain read with a value no replica holds there.
    """
    offsets = sorted(set().union(*(r.values.keys() for r in replicas.values()))) if replicas else []
    differing = []
    for offset in offsets:
        held = {node: r.values[offset] for node, r in replicas.items() if offset in r.values}
        if len(held) > 1 and len(set(held.values())) > 1:
            differing.append({"offset": offset, "values": held})
    summaries = {node: r.summary() for node, r in sorted(replicas.items())}
    same_end = len({s["last_offset"] for s in summaries.values()}) <= 1
    out = {"topic": topic, "partition": partition, "replicas": summaries,
           "agree": not differing and same_end, "same_end": same_end,
           "differing_offsets": len(differing), "examples": spread(differing)}
    if final is not None:
        out.update(against_final(replicas, final))
    return out


def against_final(replicas: dict[str, Replica], final: dict[int, set[str]]) -> dict[str, Any]:
    """The final log held against the disks: offsets on every replica it lacks, values no replica has."""
    everywhere = set.intersection(*(set(r.values) for r in replicas.values())) if replicas else set()
    not_drained = sorted(everywhere - final.keys())
    unbacked = sorted(o for o, values in final.items()
                      if any(all(r.values.get(o) != v for r in replicas.values()) for v in values))
    return {"not_in_final": len(not_drained), "not_in_final_examples": spread(not_drained),
            "final_not_on_disk": len(unbacked), "final_not_on_disk_examples": spread(unbacked)}


def dump_replicas(folder: RunFolder, topic: str, kafka_version: str,
                  final: dict[int, dict[int, set[str]]] | None = None) -> dict[str, Any]:
    """Dump every replica of `topic` in the run folder (fetched from the hosts), keep the raw dumps, write and return `replicas.json`.

    `final`: partition -> offset -> values of the final drain, to hold against the disks (None: no drain).
    Each before-heal snapshot is dumped too and held against the replicas at the end.
    """
    report: dict[str, Any] = {"topic": topic, "partitions": [], "agree": True}
    at_end: dict[int, dict[str, Replica]] = {}
    for partition, segments in sorted(segment_files(folder, topic).items()):
        with dump_lines([seg for _, seg in segments], kafka_version) as lines:
            dumped = parse_dump(kept_raw(lines, folder, f"{topic}-{partition}"))
        at_end[partition] = merge_segments(segments, dumped)
        report["partitions"].append(compare_replicas(
            topic, partition, at_end[partition], None if final is None else final.get(partition, {})))
    report["agree"] = all(p["agree"] for p in report["partitions"])
    if final is not None:
        report["final_matches"] = all(p["not_in_final"] == 0 and p["final_not_on_disk"] == 0
                                      for p in report["partitions"])
    report["snapshots"] = [_dump_snapshot_or_say(folder, topic, kafka_version, label, at_end)
                           for label in snapshot_labels(folder)]
    write_json_atomic(folder.replicas, report)
    return report


def _dump_snapshot_or_say(folder: RunFolder, topic: str, kafka_version: str, label: str,
                          at_end: dict[int, dict[str, Replica]]) -> dict[str, Any]:
    """A snapshot that cannot be dumped (a copy cut short by a killed harness, say) is said, not fatal."""
    try:
        return dump_snapshot(folder, topic, kafka_version, label, at_end)
    except (OSError, RuntimeError, ValueError) as exc:
        return {"label": label, "error": str(exc), "partitions": []}


def dump_snapshot(folder: RunFolder, topic: str, kafka_version: str, label: str,
                  at_end: dict[int, dict[str, Replica]]) -> dict[str, Any]:
    """One before-heal snapshot: what each node held then, and which of those records no replica holds at the end."""
    parts = segment_files(folder, topic, label)
    files = [seg for segments in parts.values() for _, seg in segments]
    if not files:
        return {"label": label, "partitions": []}
    with dump_lines(files, kafka_version) as lines:
        dumped = parse_dump(lines)
    out = []
    for partition, segments in sorted(parts.items()):
        kept = set().union(*(r.values.values() for r in at_end.get(partition, {}).values()))
        nodes = {}
        for node, replica in sorted(merge_segments(segments, dumped).items()):
            gone = sorted((o, v) for o, v in replica.values.items() if v not in kept)
            nodes[node] = {**replica.summary(), "gone": len(gone),
                           "gone_examples": [{"offset": o, "value": v} for o, v in spread(gone)]}
        out.append({"partition": partition, "nodes": nodes})
    return {"label": label, "partitions": out}


def kept_raw(lines: Iterable[str], folder: RunFolder, name: str) -> Iterator[str]:
    """Pass the dump's lines on, each also written as Kafka printed it to its node's `<name>.txt.gz`."""
    nodes_dir = folder.nodes_dir.resolve()
    files: dict[str, IO[str]] = {}
    out: IO[str] | None = None
    with contextlib.ExitStack() as closing:
        for line in lines:
            if line.startswith("Dumping "):
                node = Path(line[len("Dumping "):].strip()).resolve().relative_to(nodes_dir).parts[0]
                if node not in files:
                    target = folder.node(node).replica_dump_dir / f"{name}.txt.gz"
                    target.parent.mkdir(parents=True, exist_ok=True)
                    files[node] = closing.enter_context(gzip.open(target, "wt", encoding="utf-8", compresslevel=3))
                out = files[node]
            if out is not None:
                out.write(line)
            yield line


def final_log(history_dir: Path, topic: str) -> dict[int, dict[int, set[str]]] | None:
    """partition -> offset -> values of the `final` reads of `topic` in a history; None without any."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    path = history_dir / "reads.parquet"
    if not path.exists():
        return None
    reads = pq.read_table(path, columns=["phase", "topic", "partition", "offset", "value"])
    reads = reads.filter(pc.and_(pc.equal(reads["phase"], "final"), pc.equal(reads["topic"], topic)))
    if reads.num_rows == 0:
        return None
    out: dict[int, dict[int, set[str]]] = {}
    for p, o, v in zip(*(reads[c].to_pylist() for c in ("partition", "offset", "value")), strict=True):
        out.setdefault(p, {}).setdefault(o, set()).add(v)
    return out

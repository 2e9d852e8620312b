"""Expectations that name the mechanism: a fault's error code, evidence lines in the nodes' logs, and INCONCLUSIVE
when a precondition's evidence is missing (harness.expectation, harness.evidence), on hand-made run folders."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from checkers.verdict import FAILED, INCONCLUSIVE, PASSED, expectation_state
from harness.evidence import gather
from harness.expectation import Evidence, LogFinding, compare, parse_expect
from harness.spec import load_specs, parse_spec
from testbed.errors import SpecError
from testbed.runfolder import RunFolder
from tests.conftest import REPO

T0 = 1_800_000_000 * 1_000_000_000  # the story's start, ns since the epoch (2027-01-15 08:00:00 UTC)
S = 1_000_000_000
STRAY = {"name": "stray-hang", "at_s": 6, "late_ms": 0.0, "invoked_ns": T0 + 6 * S,
         "stray": {"status": "fail", "error": "INVALID_TXN_STATE", "error_code": 48}}
SPEC = {"name": "t", "workloads": {"producers": [{"azs": ["az1"]}]}, "nemesis": [{"at": 6, "fault": "stray-transactional-produce", "partition": 0, "name": "stray-hang"},
                                 {"at": 7, "stop": "stray-hang"},
                                 {"at": 18, "fault": "kill", "target": "broker-2", "name": "kill-controller"},
                                 {"at": 30, "stop": "kill-controller"}]}
VALID = {"valid": True, "counts": {"lost": 0}}


def stamp(ns: int) -> str:
    from datetime import UTC, datetime
    moment = datetime.fromtimestamp(ns // S, tz=UTC)
    return f"[{moment:%Y-%m-%d %H:%M:%S},{ns % S // 1_000_000:03d}]"


def run_folder(tmp_path: Path, rows: list[tuple[int, str, str, dict[str, Any]]],
               logs: dict[tuple[int, str], list[tuple[int, str]]]) -> RunFolder:
    """A run folder with a nemesis journal (time, type, fault, detail) and, per (broker id, file), timed lines."""
    folder = RunFolder(tmp_path / "run").make()
    folder.nemesis_journal.write_text("".join(json.dumps({"time_ns": t, "type": kind, "fault": fault, "targets": "{}",
                                                          "detail": json.dumps(detail)}) + "\n"
                                              for t, kind, fault, detail in rows))
    for (broker, file), lines in logs.items():
        node = folder.node(f"az{broker + 1}-node")
        node.config_dir.mkdir(parents=True, exist_ok=True)
        node.config("broker").write_text(f"broker.id={broker}\n")
        role = "broker"
        node.logs(role).mkdir(parents=True, exist_ok=True)
        (node.logs(role) / file).write_text("".join(f"{stamp(t)} {text}\n" for t, text in lines))
    return folder


def journal(error_code: int | None = 48) -> list[tuple[int, str, str, dict[str, Any]]]:
    stray = {**STRAY, "stray": {**STRAY["stray"], "error_code": error_code}}
    return [(T0 + 6 * S, "start", "stray-transactional-produce", stray),
            (T0 + 7 * S, "stop", "stray-transactional-produce", {"name": "stray-hang"}),
            (T0 + 18 * S, "start", "kill", {"name": "kill-controller", "at_s": 18, "late_ms": 2.0,
                                            "invoked_ns": T0 + 18 * S + 2_000_000}),
            (T0 + 30 * S, "stop", "kill", {"name": "kill-controller"})]


def test_a_fault_must_get_the_error_code_the_expectation_names(tmp_path: Path) -> None:
    expect = parse_spec({**SPEC, "expect": {"faults": {"stray-hang": {"error": 48}}}}).expect
    assert expect.faults == (("stray-hang", "INVALID_TXN_STATE"),)  # a code and a name are the same expectation
    assert parse_expect({"faults": {"stray-hang": {"error": "INVALID_TXN_STATE"}}}).faults == expect.faults
    refused = compare(expect, VALID, {}, gather(expect, run_folder(tmp_path / "a", journal(48), {})))
    assert refused is not None and refused["passed"], refused
    assert "stray-hang error INVALID_TXN_STATE" in refused["expected"]
    assert "stray-hang: INVALID_TXN_STATE" in refused["observed"]
    # Any other refusal, or none, fails it: NOT_LEADER_OR_FOLLOWER (6), a timeout (7), no answer at all.
    for code, got in ((6, "NOT_LEADER_OR_FOLLOWER"), (7, "REQUEST_TIMED_OUT"), (None, "no answer (INVALID_TXN_STATE)")):
        other = compare(expect, VALID, {}, gather(expect, run_folder(tmp_path / str(code), journal(code), {})))
        assert other is not None and other["mismatches"] == [f"stray-hang got {got} (expected INVALID_TXN_STATE)"]
        assert expectation_state(other) == FAILED
    taken = parse_expect({"faults": {"stray-hang": {"error": 0}}})
    assert taken.faults == (("stray-hang", "NONE"),)
    assert compare(taken, VALID, {}, gather(taken, run_folder(tmp_path / "t", journal(0), {})))["passed"]  # type: ignore[index]
    never = compare(expect, VALID, {}, Evidence())
    assert never is not None and never["mismatches"] == [
        "stray-hang got no outcome (the fault never started) (expected INVALID_TXN_STATE)"]


def test_bad_fault_expectations_are_one_line_spec_errors() -> None:
    with pytest.raises(SpecError, match=r"^expect\.faults\.stray-hang\.error: 'NOPE' is no Kafka error"):
        parse_spec({**SPEC, "expect": {"faults": {"stray-hang": {"error": "NOPE"}}}})
    with pytest.raises(SpecError, match=r"^expect\.faults\.stray: no fault of the nemesis timeline is named 'stray'"):
        parse_spec({**SPEC, "expect": {"faults": {"stray": {"error": 48}}}})
    with pytest.raises(SpecError, match=r"^expect\.faults\.kill-controller: a kill fault sends no request"):
        parse_spec({**SPEC, "expect": {"faults": {"kill-controller": {"error": 48}}}})
    with pytest.raises(SpecError, match=r"^expect\.faults\.stray-hang: one of error .* and counted .*, got neither"):
        parse_spec({**SPEC, "expect": {"faults": {"stray-hang": {}}}})
    with pytest.raises(SpecError, match=r"^expect\.faults\.kill-controller: a kill fault is no disk fault"):
        parse_spec({**SPEC, "expect": {"faults": {"kill-controller": {"counted": "delayed-fsync"}}}})


DISK_SPEC = {**SPEC, "nemesis": [{"at": 8, "fault": "slow-disk", "target": "leader", "path": "partition",
                                  "fsync_delay_ms": 2000, "name": "slow-leader"}, {"at": 24, "stop": "slow-leader"}]}


def disk_journal(counts: dict[str, int] | None) -> list[tuple[int, str, str, dict[str, Any]]]:
    rows = [(T0 + 8 * S, "start", "slow-disk", {"name": "slow-leader", "at_s": 8, "late_ms": 0.0,
                                                 "invoked_ns": T0 + 8 * S})]
    if counts is not None:
        node = {"path": "kafka-data/faultline-0", "counts": counts, "files": {}}
        rows.append((T0 + 24 * S, "stop", "slow-disk", {"name": "slow-leader", "counts": {"az1-node": node},
                                                        "restarted": []}))
    return rows


def test_a_disk_fault_must_have_counted_the_calls_the_expectation_names(tmp_path: Path) -> None:
    expect = parse_spec({**DISK_SPEC, "expect": {"faults": {"slow-leader": {"counted": "delayed-fsync"}}}}).expect
    assert expect.counted == (("slow-leader", "delayed-fsync"),) and not expect.faults
    hit = compare(expect, VALID, {}, gather(expect, run_folder(tmp_path / "hit", disk_journal(
        {"delayed-fsync": 6, "delay-ms": 12000}), {})))
    assert hit is not None and hit["passed"], hit
    assert "slow-leader counted delayed-fsync" in hit["expected"] and "slow-leader: delayed-fsync 6" in hit["observed"]
    # Set but never in a broker's path (no fsync came while it was on), or never stopped: the run fails.
    for label, counts, seen in (("idle", {}, "delayed-fsync 0"), ("open", None, "no stop row (the fault never stopped)")):
        missed = compare(expect, VALID, {}, gather(expect, run_folder(tmp_path / label, disk_journal(counts), {})))
        assert missed is not None and missed["mismatches"] == [f"slow-leader counted {seen} (expected > 0)"]
        assert expectation_state(missed) == FAILED
    with pytest.raises(SpecError, match=r"^expect\.faults\.slow-leader: a slow-disk fault sends no request"):
        parse_spec({**DISK_SPEC, "expect": {"faults": {"slow-leader": {"error": 0}}}})
    with pytest.raises(SpecError, match=r"^expect\.faults\.slow-leader: one of error .* got error, counted"):
        parse_spec({**DISK_SPEC, "expect": {"faults": {"slow-leader": {"error": 0, "counted": "delayed-fsync"}}}})
    with pytest.raises(SpecError, match=r"^expect\.faults\.slow-leader\.counted: .*delayed-fsync"):
        parse_spec({**DISK_SPEC, "expect": {"faults": {"slow-leader": {"counted": "slow"}}}})


def evidence_spec(**item: Any) -> Any:
    return parse_spec({**SPEC, "expect": {"absent": ["lost"], "logs": [{"pattern": "AlterIsr", **item}]}}).expect


def test_log_lines_are_looked_for_in_the_named_nodes_within_the_window(tmp_path: Path) -> None:
    logs = {(0, "server.log"): [(T0 + 15 * S, "sent AlterIsr for faultline-0"),
                                (T0 + 40 * S, "late AlterIsr answer")],
            (2, "controller.log"): [(T0 + 16 * S, "AlterIsr received")]}
    folder = run_folder(tmp_path, journal(), logs)
    window = evidence_spec(nodes="broker-0", **{"from": "kill-controller.start-5", "to": "kill-controller.start"})
    (found,) = gather(window, folder).logs
    assert found.count == 1 and found.lines[0].startswith("az1-node/server.log: ") and "sent AlterIsr" in found.lines[0]
    assert compare(window, VALID, {}, gather(window, folder))["passed"]  # type: ignore[index]
    # The controller's line is another node's; the late answer is after the window.
    later = evidence_spec(nodes=["broker-0"], **{"from": "kill-controller.stop", "to": "run+60"})
    assert gather(later, folder).logs[0].count == 1
    anywhere = evidence_spec(file="controller.log")
    assert gather(anywhere, folder).logs[0].count == 1  # every node, that file only
    assert gather(evidence_spec(), folder).logs[0].count == 3  # every node, every file, the whole log
    # The story's start is a scheduled row's invoked_ns less its at_s and its lateness.
    first = evidence_spec(**{"from": "run+14.5", "to": "run+15.5"})
    assert gather(first, folder).logs[0].count == 1
    must_not = evidence_spec(appears=False, **{"from": "kill-controller.start"})
    judged = compare(must_not, VALID, {}, gather(must_not, folder))
    assert judged is not None and not judged["passed"] and judged["mismatches"][0].startswith(
        "no /AlterIsr/ in any node's logs from kill-controller.start to the last: 1 line(s), e.g. az1-node/")


def test_a_missing_precondition_makes_the_run_inconclusive_unless_a_forbidden_anomaly_fails_it(tmp_path: Path) -> None:
    expect = evidence_spec(nodes="broker-0", precondition=True, says="an AlterIsr in flight",
                           **{"from": "kill-controller.start-5", "to": "kill-controller.start"})
    hit = run_folder(tmp_path / "hit", journal(), {(0, "server.log"): [(T0 + 15 * S, "sent AlterIsr")]})
    missed = run_folder(tmp_path / "missed", journal(), {(0, "server.log"): [(T0 + 5 * S, "sent AlterIsr")]})
    assert expectation_state(compare(expect, VALID, {}, gather(expect, hit))) == PASSED
    judged = compare(expect, VALID, {}, gather(expect, missed))
    assert judged is not None and expectation_state(judged) == INCONCLUSIVE and not judged["passed"]
    assert judged["mismatches"] == [] and judged["inconclusive"] == [
        "precondition not shown: an AlterIsr in flight in broker-0's logs from kill-controller.start-5 to "
        "kill-controller.start (precondition): 0 line(s)"]
    # A stall the window would explain is inconclusive too; a lost write fails it, window or not.
    stalled = {"valid": "unknown", "reason": "timed out", "counts": {"lost": 0}}
    assert expectation_state(compare(expect, stalled, {}, gather(expect, missed))) == INCONCLUSIVE
    lost = compare(expect, {"valid": False, "counts": {"lost": 3}}, {}, gather(expect, missed))
    assert lost is not None and expectation_state(lost) == FAILED and "inconclusive" not in lost
    assert lost["mismatches"][-1].startswith("precondition not shown: an AlterIsr in flight")
    # A window whose fault never fired: the evidence cannot be looked for, which is missing evidence.
    unfired = run_folder(tmp_path / "unfired", journal()[:2], {(0, "server.log"): [(T0 + 15 * S, "sent AlterIsr")]})
    (finding,) = gather(expect, unfired).logs
    assert finding == LogFinding(problem="kill-controller.start-5 never happened in this run (no such row in the "
                                         "nemesis journal)")


def test_bad_log_evidence_is_a_one_line_spec_error() -> None:
    cases = [({"pattern": "["}, r"^expect\.logs\[0\]\.pattern: '\[' is not a regular expression"),
             ({"pattern": "x", "from": "kill-controller.begin"}, r"^expect\.logs\[0\]\.from: 'kill-controller.begin' "
                                                                 r"is not a moment of the run"),
             ({"pattern": "x", "to": "nothing.stop"}, r"^expect\.logs\[0\]\.to: the nemesis timeline never stops a "
                                                      r"fault named 'nothing'"),
             ({"pattern": "x", "nodes": "broker-7"}, r"^expect\.logs\[0\]\.nodes: broker-7 is not one of the "
                                                     r"cluster's 3 brokers"),
             ({"pattern": "x", "nodes": "controller"}, r"^expect\.logs\[0\]\.nodes: must be a broker like broker-0"),
             ({"pattern": "x", "file": "gc.log"}, r"^expect\.logs\[0\]\.file: must be one of"),
             ({"pattern": "x", "precondition": True, "appears": False}, r"^expect\.logs\[0\]\.precondition: a "
                                                                         r"precondition is evidence that must appear"),
             ({"says": "x"}, r"^expect\.logs\[0\]\.pattern: required"),
             ({"pattern": r"Target replicas \S*[[(]0, 1, 3[])]"}, r"^expect\.logs\[0\]\.pattern: .* may mean otherwise "
                                                                r"to a later Python \(Possible nested set at position 20\)")]
    for item, message in cases:
        with pytest.raises(SpecError, match=message):
            parse_spec({**SPEC, "expect": {"logs": [item]}})
    with pytest.raises(SpecError, match=r"^expect\.reason: 'stalled \[a-z&&\]\+' may mean otherwise .*Possible set "
                                        r"intersection"):
        parse_spec({**SPEC, "expect": {"valid": "unknown", "reason": "stalled [a-z&&]+"}})


@pytest.mark.filterwarnings("error::FutureWarning")
def test_every_stored_storys_patterns_compile_without_a_future_warning() -> None:
    re.purge()  # a pattern compiled before, with its warning ignored, would come from re's cache without a word
    for path in sorted((REPO / "scenarios").rglob("*.yaml")):
        for spec in load_specs(path):
            for pattern in [ev.pattern for ev in spec.expect.logs] + [spec.expect.reason or ""]:
                assert re.compile(pattern), (path, spec.configuration, pattern)


def test_a_log_line_of_one_metadata_mode_is_held_only_on_a_cluster_of_that_mode() -> None:
    """disk-full-az pinned the ZooKeeper controller's OfflinePartition line, which no KRaft cluster writes: on KRaft
    the run failed for want of a line its Kafka never logs. `metadata:` scopes such a line to its mode."""
    logs = [{"pattern": "zk line", "metadata": "zookeeper"}, {"pattern": "kraft line", "metadata": "kraft"},
            {"pattern": "both"}]
    zk = parse_spec({**SPEC, "expect": {"logs": logs}})
    kraft = parse_spec({**SPEC, "cluster": {"kafka_version": "3.9.1", "metadata": "kraft"}, "expect": {"logs": logs}})
    assert [ev.pattern for ev in zk.expect.logs] == ["zk line", "both"]
    assert [ev.pattern for ev in kraft.expect.logs] == ["kraft line", "both"]
    with pytest.raises(SpecError, match=r"^expect\.logs\[0\]\.pattern: '\[' is not a regular expression"):
        parse_spec({**SPEC, "cluster": {"kafka_version": "3.9.1", "metadata": "kraft"},
                    "expect": {"logs": [{"pattern": "[", "metadata": "zookeeper"}]}})


# A broker's line for a controlled shutdown the controller granted, as each Kafka writes it (read from the stored
# runs' server.log and the jars' KafkaServer and BrokerLifecycleManager classes).
SHUTDOWN_LINES = {
    "ZooKeeper mode to 3.0": "[2026-11-29 08:32:59,756] INFO [KafkaServer id=0] Controlled shutdown succeeded "
                             "(kafka.server.KafkaServer)",
    "ZooKeeper mode from 3.1": "[2026-11-29 08:25:09,001] INFO [KafkaServer id=0] Controlled shutdown request returned "
                               "successfully after 189ms (kafka.server.KafkaServer)",
    "KRaft": "INFO [BrokerLifecycleManager id=1] The controller has asked us to exit controlled shutdown. "
             "(kafka.server.BrokerLifecycleManager)",
}


def test_every_controlled_shutdown_pattern_matches_each_kafkas_wording() -> None:
    """A story that pins a controlled shutdown must see it on every version it may run: the 3.6.2 to 3.9.1 upgrade
    was INCONCLUSIVE on "Controlled shutdown succeeded", a line Kafka stopped writing in 3.1."""
    from campaign.config import load_campaign
    from campaign.plan import plan_cases

    specs = [(path, spec) for path in sorted((REPO / "scenarios").rglob("*.yaml")) for spec in load_specs(path)]
    for path in sorted((REPO / "campaigns").glob("*.yaml")):
        specs += [(path, case.load()) for case in plan_cases(load_campaign(path), 1)[0]]
    patterns = {(path.name, ev.pattern) for path, spec in specs for ev in spec.expect.logs
                if "ontrolled shutdown" in ev.pattern}
    assert len({name for name, _ in patterns}) >= 5, patterns
    for name, pattern in patterns:
        for wording, line in SHUTDOWN_LINES.items():
            assert re.search(pattern, line), (name, pattern, wording)


def test_harness_run_exits_4_when_nothing_failed_but_a_configuration_was_inconclusive() -> None:
    from checkers.configuration_result import ConfigurationResult
    from checkers.verdict import EXIT_INCONCLUSIVE, EXIT_INVALID, EXIT_VALID
    from harness.batch import worst
    from harness.scenario import exit_status
    specs = [parse_spec({**SPEC, "expect": {"absent": ["lost"]}})]

    def case(passed: bool, inconclusive: str = "") -> ConfigurationResult:
        return ConfigurationResult("t", "c", "", "", passed, 1.0, inconclusive=inconclusive)

    assert exit_status(specs, [case(True), case(True)]) == EXIT_VALID
    assert exit_status(specs, [case(True), case(False, "precondition not shown: x")]) == EXIT_INCONCLUSIVE
    assert exit_status(specs, [case(False), case(False, "precondition not shown: x")]) == EXIT_INVALID
    assert worst([EXIT_VALID, EXIT_INCONCLUSIVE]) == EXIT_INCONCLUSIVE and worst([EXIT_INCONCLUSIVE, 2]) == 2


def test_a_kraft_nodes_logs_are_found_by_its_brokers_node_id(tmp_path: Path) -> None:
    """A KRaft broker's server.properties names it by node.id (no broker.id): `nodes: broker-1` still finds that
    node's logs, its controller's too (the controller-membership run on 3.9.1 was INCONCLUSIVE for want of this)."""
    folder = RunFolder(tmp_path / "run").make()
    folder.nemesis_journal.write_text("".join(json.dumps({"time_ns": t, "type": kind, "fault": fault, "targets": "{}",
                                                          "detail": json.dumps(detail)}) + "\n"
                                              for t, kind, fault, detail in journal()))
    node = folder.node("az2-node")
    node.config_dir.mkdir(parents=True, exist_ok=True)
    node.config("broker").write_text("process.roles=broker\nnode.id=1\n")
    for role in ("broker", "controller"):
        node.logs(role).mkdir(parents=True, exist_ok=True)
        (node.logs(role) / "server.log").write_text(f"{stamp(T0 + 20 * S)} [RaftManager] AlterIsr seen by {role}\n")
    (found,) = gather(evidence_spec(nodes="broker-1", file="server.log"), folder).logs
    assert found.problem is None and found.count == 2, found


def test_a_kraft_brokers_logs_are_found_by_its_node_id(tmp_path: Path) -> None:
    """A KRaft broker's server.properties has node.id, not broker.id (a migrated one too): `nodes: broker-1` still
    finds its node, and not the node whose controller is node 101."""
    folder = run_folder(tmp_path, journal(), {(1, "server.log"): [(T0 + 15 * S, "sent AlterIsr")],
                                              (2, "server.log"): [(T0 + 15 * S, "sent AlterIsr")]})
    folder.node("az2-node").config("broker").write_text("process.roles=broker\nnode.id=1\n")
    folder.node("az3-node").config("broker").write_text("process.roles=broker\nnode.id=2\n")
    (found,) = gather(evidence_spec(nodes="broker-1"), folder).logs
    assert found.count == 1 and found.lines[0].startswith("az2-node/server.log: ")


def test_an_ssh_hosts_log_stamps_are_moved_onto_the_harnesss_clock(tmp_path: Path) -> None:
    # broker-0's host clock runs 3 s ahead of the harness's (clocks.json: +2.9 s at the start, +3.1 s at the end):
    # its line stamped 14 s into the story was written at 11 s by the harness's clock, before the window.
    logs = {(0, "server.log"): [(T0 + 14 * S, "sent AlterIsr for faultline-0")]}
    folder = run_folder(tmp_path, journal(), logs)
    window = evidence_spec(nodes="broker-0", **{"from": "kill-controller.start-5", "to": "kill-controller.start"})
    assert gather(window, folder).logs[0].count == 1  # one clock (netns, docker): no clocks.json, the stamp as is
    folder.clocks.write_text(json.dumps({"start": {"az1-node": {"offset_s": 2.9, "bound_s": 0.001}},
                                         "end": {"az1-node": {"offset_s": 3.1, "bound_s": 0.001}}, "large_s": 0.01}))
    assert gather(window, folder).logs[0].count == 0
    earlier = evidence_spec(nodes="broker-0", **{"from": "run+10.5", "to": "run+11.5"})
    assert gather(earlier, folder).logs[0].count == 1

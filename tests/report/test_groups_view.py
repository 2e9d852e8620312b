"""The consumer-groups view of report.html (contract v3): members' reads per partition against the fault bands,
their commits by outcome, the committed offsets against the log end, and the v3 examples in the anomalies section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from checkers.api import check
from checkers.verdict import write_verdict
from report import render_report
from report.figures import Frame
from report.groups import offset_rows, read_spans
from tests.report.runfolder import FAULT_START, MS, NS, T0

FRAME = Frame(T0, T0 + 20 * NS)
EVERY = 10  # reads per partition between two commits
LOST_BEHIND = 5  # how far t/1's final offset is behind its highest acknowledged commit


def test_read_spans_merge_consecutive_seconds_per_member_and_partition() -> None:
    reads = pd.DataFrame({"process": ["c1", "c1", "c1", "c1", "c2"], "topic": ["t"] * 5, "partition": [0, 0, 0, 1, 0],
                          "poll_ns": [T0 + 100 * MS, T0 + NS + 5, T0 + 4 * NS, T0 + NS, T0 + 2 * NS]})
    assert read_spans(reads, FRAME) == {("c1", "t/0"): [(0, 2), (4, 5)], ("c1", "t/1"): [(1, 2)],
                                        ("c2", "t/0"): [(2, 3)]}


def test_offset_rows_hold_the_final_offset_against_acknowledged_commits_and_the_log_end() -> None:
    reads = pd.DataFrame({"process": ["c1", "d", "d", "d"], "phase": ["live", "final", "final", "final"],
                          "topic": ["t"] * 4, "partition": [0, 0, 0, 1], "offset": [3, 8, 9, 4],
                          "group": ["g", None, None, None]})
    commits = pd.DataFrame({
        "process": ["c1", "c1", "c1", "d", "d"], "group": ["g"] * 5, "kind": ["sync", "sync", "sync", "final", "final"],
        "topic": ["t"] * 5, "partition": [0, 0, 1, 0, 1], "offset": [4, 9, 3, 4, None],
        "status": ["ok", "fail", "ok", "ok", "ok"]})
    rows = {r["where"]: r for r in offset_rows("g", reads, commits)}
    assert (rows["t/0"]["committed"], rows["t/0"]["acked"], rows["t/0"]["end"], rows["t/0"]["behind"]) == (
        "4", "4", "10", "6")
    assert not rows["t/0"]["lost"], "the refused commit of 9 is not acknowledged"
    assert (rows["t/1"]["committed"], rows["t/1"]["lost"]) == ("none", True)  # acknowledged 3, kept none


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


def _commit(row: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {"process": row["process"], "group": "g", "kind": "sync", "topic": row["topic"],
            "partition": row["partition"], "offset": row["offset"] + 1, "status": "ok", "error": None,
            "invoke_ns": row["poll_ns"] + MS, "complete_ns": row["poll_ns"] + 3 * MS, "az": row["az"], **changes}


def _make_grouped(run: Path) -> int:
    """Group g commits `after`: consumer-az1-0 holds t/0 until the isolation, consumer-az2-0 takes it over from
    az1's last acknowledged commit, so the records az1 read after it are handed again; consumer-az3-0 holds t/1,
    whose final offset the drain reads LOST_BEHIND behind the last acknowledged commit. Then the real verdict.
    Returns how many records consumer-az2-0 was handed again (az1 read them after its last commit)."""
    history = run / "history"
    rows = _jsonl(history / "reads.jsonl")
    final = [r for r in rows if r["phase"] == "final"]
    live = sorted((r for r in rows if r["phase"] == "live"), key=lambda r: (r["partition"], r["offset"]))
    az1 = [r for r in live if r["process"] == "consumer-az1-0" and r["partition"] == 0 and r["poll_ns"] < FAULT_START]
    commits = [_commit(r) for r in az1[EVERY - 1::EVERY]]
    resume = commits[-1]["offset"]
    commits.append(_commit(az1[-1], status="fail", error="ILLEGAL_GENERATION",
                           invoke_ns=FAULT_START + 500 * MS, complete_ns=FAULT_START + 510 * MS))
    az2 = [dict(r, poll_ns=max(r["poll_ns"], FAULT_START + NS + r["offset"] * MS)) for r in live
           if r["process"] == "consumer-az2-0" and r["partition"] == 0 and r["offset"] >= resume]
    az3 = [r for r in live if r["process"] == "consumer-az3-0" and r["partition"] == 1]
    commits += [_commit(r) for r in az2[EVERY - 1::EVERY] + az3[EVERY - 1::EVERY]]
    commits.append(_commit(az3[-1], status="info", error="REQUEST_TIMED_OUT", complete_ns=None))
    for reader in (az1, az2, az3):
        for seq, r in enumerate(sorted(reader, key=lambda r: (r["poll_ns"], r["offset"]))):
            r["seq"] = seq
    acked = {p: max(c["offset"] for c in commits if c["partition"] == p and c["status"] == "ok") for p in (0, 1)}
    commits += [{"process": "drain-az2", "group": "g", "kind": "final", "topic": "t", "partition": p,
                 "offset": acked[p] - (LOST_BEHIND if p == 1 else 0), "status": "ok", "error": None,
                 "invoke_ns": final[-1]["poll_ns"] + p, "complete_ns": final[-1]["poll_ns"] + p + MS, "az": "az2"}
                for p in (0, 1)]
    _write(history / "reads.jsonl", az1 + az2 + az3 + final)
    _write(history / "commits.jsonl", commits)
    processes = _jsonl(history / "processes.jsonl")
    for p in processes:
        if p["role"] == "consumer":
            p["commit"] = "after"
            p["config"].update({"enable.auto.commit": False, "auto.offset.reset": "earliest"})
    _write(history / "processes.jsonl", processes)
    write_verdict(check(history, engine="pandas"), run)
    return sum(r["offset"] >= resume for r in az1)


def _section(html: str, start: str) -> str:
    part = html[html.index(start):]
    return part[:part.index("</section>")]


def test_a_run_without_group_commits_has_no_groups_view(report_html: str) -> None:
    assert 'id="groups"' not in report_html and 'href="#groups"' not in report_html


def test_the_report_shows_each_member_its_commits_and_the_committed_offsets(run_copy: Path) -> None:
    again = _make_grouped(run_copy)
    verdict = json.loads((run_copy / "verdict.json").read_text())
    assert again and verdict["counts"]["redelivered"] == again and verdict["counts"]["lost-commit"] == 1
    html = render_report(run_copy).read_text(encoding="utf-8")
    assert 'href="#groups"' in html
    section = _section(html, '<section id="groups"')
    assert 'id="plot-group-1"' in section and "Group <code>g</code>" in section
    plot = json.loads(html.split('data-plot="plot-group-1"', 1)[1].split(">", 1)[1].split("</script>", 1)[0])
    lanes = {y for trace in plot["data"] for y in trace["y"] if y}
    assert lanes == {"consumer-az1-0 · t/0", "consumer-az2-0 · t/0", "consumer-az3-0 · t/1"}
    assert any(s.get("type") == "rect" for s in plot["layout"]["shapes"]), "the fault bands"
    assert {t["name"] for t in plot["data"]} >= {"t/0", "t/1", "commit fail", "commit info"}
    members = section[section.index("<tbody>"):section.index("</tbody>")].split("<tr>")[1:]
    az1 = next(m for m in members if "consumer-az1-0" in m)
    assert "<td>after</td>" in az1 and "ILLEGAL_GENERATION ×1" in az1 and "<td>t/0</td>" in az1
    az3 = next(m for m in members if "consumer-az3-0" in m)
    assert "REQUEST_TIMED_OUT ×1" in az3
    offsets = section[section.index("committed at the end"):]
    lost = offsets[offsets.index('class="lost-commit"'):].split("</tr>", 1)[0]
    assert "<code>t/1</code>" in lost and offsets.count('class="lost-commit"') == 1  # t/0 kept its commits
    assert '<a href="#anomaly-lost-commit">1 lost-commit</a>' in section
    assert f'<a href="#anomaly-redelivered">{again} redelivered</a>' in section


def test_the_v3_examples_render_their_group_member_and_commit(run_copy: Path) -> None:
    _make_grouped(run_copy)
    html = render_report(run_copy).read_text(encoding="utf-8")
    lost = _section(html, 'id="anomaly-lost-commit"')
    assert "group: g" in lost and "consumer-az3-0" in lost
    assert "commit: " in lost and "committed: " in lost and "status ok" in lost
    redelivered = _section(html, 'id="anomaly-redelivered"')
    assert "group: g" in redelivered and "consumer-az2-0" in redelivered and "reads:" in redelivered

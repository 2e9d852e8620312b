"""The report's views of the hand-built run: faults in words, errors by code, latency, ISR, links to faults and logs."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

from tests.report.runfolder import AZS, verdict_of
from tests.report.test_html import plot_json, row_html, section_html


def test_faults_are_in_words_and_each_row_has_an_anchor(report_html: str) -> None:
    faults = section_html(report_html, "faults")
    assert "az1 cut off from every other AZ" in faults
    assert "kill broker-2: SIGKILL" in faults
    assert "leader-of t/1: broker-2" in faults
    table = faults[faults.index("<tbody>") :]
    assert "{" not in table and '"' not in re.sub(r"<[^>]+>", "", table), "raw JSON in the faults table"
    assert re.findall(r'<tr id="(fault-\d+)"', faults) == ["fault-1", "fault-2", "fault-3"]


def test_anomaly_rows_link_to_their_fault_rows_and_to_the_broker_logs_then(report_html: str) -> None:
    row = row_html(report_html, "lost-1")
    assert '<a href="#fault-1">az1 cut off from every other AZ (+5.000 s → +12.000 s; during)</a>' in row
    logs = re.findall(r'<a href="#(log-\d+)">([^<]+)</a>', row)
    assert [text for _, text in logs] == ["az1-node (broker 0)", "az2-node (broker 1)"]  # the leaders it names
    section = section_html(report_html, "logs")
    for anchor, _ in logs:
        assert f'id="{anchor}"' in section
    excerpt = section[section.index(f'id="{logs[1][0]}"') :]
    excerpt = excerpt[: excerpt.index("</div>")]
    assert "t-0 starts at leader epoch 1" in excerpt  # broker-1's election, 1 s after the lost write
    assert "java.io.IOException" in excerpt  # a stack trace stays with its line
    assert "KafkaServer id=1] started" not in excerpt  # +1 s: outside the excerpt
    # Examples the checker gave no leaders for take the leaders the observers saw then.
    recovered = row_html(report_html, "recovered-1")
    assert "az3-node (broker 2)" in recovered or "az2-node (broker 1)" in recovered


def test_errors_are_broken_down_by_code(report_html: str, built_run: Path) -> None:
    errors = section_html(report_html, "errors")
    rows = {
        m.group(1): [int(n.replace(",", "")) for n in re.findall(r'class="num">([\d,]+)<', m.group(2))]
        for m in re.finditer(r"<tr><td><code>([A-Z_]+)</code></td>(.*?)</tr>", errors, re.S)
    }
    assert set(rows) == {"REQUEST_TIMED_OUT", "NOT_LEADER_OR_FOLLOWER"}
    stats = verdict_of(built_run)["stats"]
    assert sum(r[0] for r in rows.values()) == stats["fail"] + stats["info"]
    total, failed, unknown, *per_az = rows["NOT_LEADER_OR_FOLLOWER"]
    assert failed == total and unknown == 0 and sum(per_az) == total and len(per_az) == len(AZS)


def test_produce_latency_percentiles_per_az(report_html: str) -> None:
    fig = plot_json(report_html, "plot-latency")
    names = [t["name"] for t in fig["data"]]
    assert names == [f"{az} {p}" for az in AZS for p in ("p50", "p99", "max")]
    traces = {t["name"]: t for t in fig["data"]}
    for az in AZS:
        p50, p99, top = (traces[f"{az} {p}"]["y"] for p in ("p50", "p99", "max"))
        assert all(0 < a <= b <= c for a, b, c in zip(p50, p99, top, strict=True))
    assert fig["layout"]["yaxis"]["type"] == "log"
    assert sorted((s["x0"], s["x1"]) for s in fig["layout"]["shapes"] if s["type"] == "rect") == [
        (5.0, 12.0),
        (14.0, 16.0),
    ]


def test_isr_size_per_partition_per_observer(report_html: str) -> None:
    fig = plot_json(report_html, "plot-isr")
    titles = [fig["layout"][k]["title"]["text"] for k in sorted(fig["layout"]) if k.startswith("yaxis")]
    assert titles == ["t/0", "t/1"]
    seen_by_1 = [t for t in fig["data"] if t["name"] == "seen by broker-1" and t["yaxis"] in ("y", None)]
    assert seen_by_1 and 2 in seen_by_1[0]["y"] and seen_by_1[0]["y"][0] == 3  # t/0 shrank to {1, 2}
    isr = unescape(section_html(report_html, "isr"))
    assert "min.insync.replicas = 1" in isr and "No partition was under min ISR" in isr

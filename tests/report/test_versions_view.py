"""The versions view of report.html: after a rolling upgrade, each node's Kafka version (and pinned protocol) over
time from run.json's `node_versions`, the controller's broker marked on its node's lane, none without an upgrade."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from report import render_report
from report.figures import Frame
from report.versions import controller_spans, spans
from tests.report.runfolder import NS, T0

FRAME = Frame(T0, T0 + 20 * NS)


def test_spans_clip_each_version_to_the_next_and_name_the_pinned_protocol() -> None:
    steps = [{"from_ns": T0 - NS, "version": "2.7.2", "inter_broker_protocol": None},
             {"from_ns": T0 + 5 * NS, "version": "3.9.1", "inter_broker_protocol": "2.7"},
             {"from_ns": T0 + 12 * NS, "version": "3.9.1", "inter_broker_protocol": "3.9"}]
    assert spans(steps, FRAME) == [(T0, T0 + 5 * NS, "2.7.2"), (T0 + 5 * NS, T0 + 12 * NS, "3.9.1, protocol 2.7"),
                                   (T0 + 12 * NS, T0 + 20 * NS, "3.9.1, protocol 3.9")]


def test_the_controller_is_who_most_observers_named_and_a_split_is_no_one() -> None:
    rows = [{"time_ns": T0 + t * NS, "observer": f"broker-{o}", "controller": c}
            for t, views in enumerate([(0, 0, 0), (0, 0, 1), (1, 1, 0), (1, 2, None)]) for o, c in enumerate(views)]
    observations = pd.DataFrame(rows)
    found = controller_spans(observations)
    assert [b for _, _, b in found] == [0, 1] and found[0][0] == T0, found  # 2 of 3 still name 0 at +1 s
    assert found[1][0] == T0 + 2 * NS and found[1][1] <= T0 + 3 * NS  # at +3 s: 1, 2 and none: no majority


def test_the_report_shows_each_nodes_versions_after_an_upgrade_and_nothing_without(run_copy: Path) -> None:
    html = render_report(run_copy).read_text(encoding="utf-8")
    assert 'id="versions"' not in html  # no upgrade, no view
    iso = lambda ns: pd.Timestamp(ns, tz="UTC").isoformat().replace("+00:00", "Z")  # noqa: E731
    manifest = run_copy / "run.json"
    doc = json.loads(manifest.read_text()) if manifest.exists() else {}
    doc["node_versions"] = {
        f"az{i}-node": [{"from": iso(T0), "version": "2.7.2", "inter_broker_protocol": None},
                        {"from": iso(T0 + (4 + 3 * i) * NS), "version": "3.9.1", "inter_broker_protocol": "2.7"}]
        for i in (1, 2, 3)}
    manifest.write_text(json.dumps(doc))
    (run_copy / "report.html").unlink()
    html = render_report(run_copy).read_text(encoding="utf-8")
    assert '<section id="versions"' in html and 'href="#versions"' in html
    assert "<td>az2-node</td><td>+10.0 s</td><td>3.9.1</td><td>2.7</td>" in html
    assert "<td>az1-node</td><td>+0.0 s</td><td>2.7.2</td><td>its own</td>" in html
    assert "3.9.1, protocol 2.7" in html and "the controller from" in html  # the figure's bars and controller marks


def test_the_configuration_card_names_the_software_and_each_client_hosts_client_under_test(run_copy: Path) -> None:
    manifest = run_copy / "run.json"
    doc = json.loads(manifest.read_text()) if manifest.exists() else {}
    doc["commit"] = "c4694ff"
    doc["versions"] = {"faultline": "0.1.0", "kafka": "3.7.1", "kafka_scala": "2.13", "zookeeper": "3.8.4",
                       "java": "17", "librdkafka": "2.16.0", "confluent_kafka": "2.16.1", "python": "3.11.7",
                       "client_under_test": {
                           "confluent_kafka": "2.10.1", "librdkafka": "2.10.1", "python": "3.11.2",
                           "by_host": {"az1-client": {"confluent_kafka": "2.10.1", "librdkafka": "2.10.1",
                                                      "python": "3.11.2"},
                                       "az2-client": {"confluent_kafka": "2.10.1", "librdkafka": "2.10.1",
                                                      "python": "3.12.3"}}}}
    manifest.write_text(json.dumps(doc))
    html = render_report(run_copy).read_text(encoding="utf-8")
    assert "<dt>nodes</dt><dd><code>Kafka 3.7.1 (Scala 2.13), ZooKeeper 3.8.4, Java 17</code>" in html
    assert "<dt>the harness&#39;s client</dt><dd><code>confluent-kafka 2.16.1 / librdkafka 2.16.0, Python 3.11.7" in html
    assert "<dt>client under test</dt><dd><code>confluent-kafka 2.10.1 / librdkafka 2.10.1, Python 3.11.2" in html
    assert ("<dt>client under test on az2-client</dt><dd><code>confluent-kafka 2.10.1 / librdkafka 2.10.1, "
            "Python 3.12.3") in html
    assert "0.1.0 (c4694ff)" in html
    del doc["versions"]
    manifest.write_text(json.dumps(doc))
    (run_copy / "report.html").unlink()
    assert "run.json&#39;s versions" not in render_report(run_copy).read_text(encoding="utf-8")

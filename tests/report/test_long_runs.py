"""A run of hours (a soak) keeps its figures readable: rate traces in wider buckets, a bounded stack of fault labels."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from report import fmt
from report.faults import FaultWindow
from report.figures import (
    MAX_LABEL_LANES,
    MAX_POINTS,
    Frame,
    add_faults,
    bucket_seconds,
    per_bucket,
    timeline_figure,
)
from report.transactions import outcomes_per_second

S = fmt.NS
HOURS_6 = Frame(0, 6 * 3600 * S)


def test_buckets_widen_with_the_run_so_a_trace_holds_at_most_max_points() -> None:
    assert bucket_seconds(Frame(0, 90 * S)) == 1 and bucket_seconds(Frame(0, MAX_POINTS * S)) == 1
    assert bucket_seconds(HOURS_6) == 18 and bucket_seconds(HOURS_6, 300) == 72
    times = pd.Series([0, S // 2, 17 * S, 18 * S, 21599 * S])
    rates = per_bucket(times, HOURS_6, 18)
    assert len(rates) == 1201 and rates[0] == round(3 / 18, 2) and rates[1] == round(1 / 18, 2)
    assert per_bucket(times, Frame(0, 20 * S), 1)[:3] == [2, 0, 0], "one second: whole counts, as before"


def test_a_six_hour_timeline_has_rates_per_second_in_18_second_buckets() -> None:
    n = 6 * 3600 * 10  # ten acknowledged writes a second, for six hours
    complete = [i * S // 10 for i in range(n)]
    writes = pd.DataFrame({"process": "producer-az1-0", "az": "az1", "status": "ok", "complete_ns": complete,
                           "invoke_ns": complete})
    processes = pd.DataFrame({"process": ["producer-az1-0"], "az": ["az1"]})
    fig = timeline_figure(writes, processes, HOURS_6, [], [], {})
    acked = fig.data[0]
    assert len(acked.x) == 1201 and acked.x[1] == 18 and set(acked.y[:-1]) == {10.0}
    assert "per second over 18 s" in acked.hovertemplate


def test_hundreds_of_faults_stack_at_most_max_label_lanes_and_say_how_many_were_left_out() -> None:
    windows = [FaultWindow("isolate-az", {"isolated": ["az1"]}, i * 40 * S, (i * 40 + 15) * S) for i in range(500)]
    fig = go.Figure(layout={"height": 400, "margin": {"t": 30, "b": 60}})
    add_faults(fig, HOURS_6, windows, [])
    shapes = fig.layout.to_plotly_json()["shapes"]
    assert sum(s["type"] == "rect" for s in shapes) == 500, "every fault's band is drawn"
    labels = [a["text"] for a in fig.layout.to_plotly_json()["annotations"]]
    left_out = [t for t in labels if "more fault labels left out" in t]
    assert len(left_out) == 1 and len(labels) - 1 + int(left_out[0].split()[0]) == 500
    assert fig.layout.height <= 400 + 18 * (MAX_LABEL_LANES + 1), "the labels' room is bounded"


def test_transaction_outcomes_are_counted_per_bucket_in_a_long_run() -> None:
    txns = pd.DataFrame({"process": "producer-az1-0", "status": ["ok", "ok", "fail"],
                         "complete_ns": [1 * S, 17 * S, 40 * S], "begin_ns": [0, 0, 0]})
    (table,) = outcomes_per_second(txns, HOURS_6).values()
    assert list(table.index) == [0, 36] and list(table["ok"]) == [2, 0] and list(table["fail"]) == [0, 1]

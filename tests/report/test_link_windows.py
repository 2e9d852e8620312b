"""The timeline draws degraded-link windows apart from clean cuts: a dashed outline and a lighter fill."""

from __future__ import annotations

import plotly.graph_objects as go

from report import fmt
from report.faults import FaultWindow
from report.figures import Frame, add_faults

S = fmt.NS


def test_degraded_link_windows_are_dashed_and_lighter_than_cuts() -> None:
    windows = [FaultWindow("cut-link", {"link": ["az1", "az2"]}, 1 * S, 4 * S),
               FaultWindow("slow-link", {"link": ["az1", "rest"], "delay_ms": 200}, 5 * S, 9 * S),
               FaultWindow("lossy-link", {"link": ["az1", "az2"], "loss": 0.3}, 6 * S, 8 * S)]
    assert [w.degraded for w in windows] == [False, True, True]
    fig = go.Figure(layout={"height": 400, "margin": {"t": 30, "b": 60}})
    add_faults(fig, Frame(0, 10 * S), windows, [])
    bands = {(s["x0"], s["x1"]): s for s in fig.layout.to_plotly_json()["shapes"] if s["type"] == "rect"}
    cut, slow, lossy = bands[(1.0, 4.0)], bands[(5.0, 9.0)], bands[(6.0, 8.0)]
    assert cut["line"]["width"] == 0 and slow["line"]["dash"] == lossy["line"]["dash"] == "dash"
    assert slow["opacity"] < cut["opacity"]
    starts = {s["x0"]: s["line"]["dash"] for s in fig.layout.to_plotly_json()["shapes"] if s["type"] == "line"}
    assert starts == {1.0: "solid", 5.0: "dash", 6.0: "dash"}
    labels = [a["text"] for a in fig.layout.to_plotly_json()["annotations"]]
    assert "slow-link delay_ms=200; link=az1, rest" in labels

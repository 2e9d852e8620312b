"""What an anomaly row links to: the fault rows around it and the node log excerpts at its moment.

The faults are the example's own (anomalies.Example.faults), each pointed
at its row of the faults table where one matches (same label, same start).
The logs are excerpts around the example's moment (the end of its window) of the broker logs of the example's leaders where the checker
named them, else of the brokers that led the example's partition in any
observer's view during its window, else of every node (logexcerpts).
Must never: invent a link: a fault with no row in the table is shown unlinked.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from report import fmt
from report.anomalies import Example
from report.logexcerpts import Excerpts


def fault_links(example: Example, rows: dict[tuple[str, int], tuple[str, str]],
                t0: int) -> list[dict[str, str]] | None:
    """The example's faults as {"text", "href"}; None if its time is unknown.

    ``rows`` maps a fault's (label, start) to its row's anchor and words; a fault with no row keeps its label
    and no link.
    """
    if example.faults is None:
        return None
    links = []
    for ref in example.faults:
        stop = fmt.rel(ref.stop_ns, t0) if ref.stop_ns is not None else "never stopped"
        anchor, words = rows.get((ref.label, ref.start_ns), ("", ref.label))
        links.append({"text": f"{words} ({fmt.rel(ref.start_ns, t0)} → {stop}; {ref.relation})",
                      "href": f"#{anchor}" if anchor else ""})
    return links


def leaders_during(observations: pd.DataFrame, topic: Any, partition: Any, lo_ns: int, hi_ns: int) -> list[int]:
    """The brokers any observer saw leading topic/partition during [lo, hi] (or last before lo)."""
    if topic is None or partition is None or not len(observations):
        return []
    mine = observations[(observations["topic"] == topic) & (observations["partition"] == partition)
                        & observations["leader"].notna()]
    during = mine[(mine["time_ns"] >= lo_ns) & (mine["time_ns"] <= hi_ns)]
    before = mine[mine["time_ns"] < lo_ns]
    if len(before):
        last = before.sort_values("time_ns").groupby("observer").tail(1)
        during = pd.concat([during, last])
    return sorted({int(b) for b in during["leader"]})


def log_links(example: Example, excerpts: Excerpts, observations: pd.DataFrame) -> list[dict[str, str]]:
    """Links to the log excerpts of the nodes that mattered at the example's moment."""
    if example.window is None or not excerpts.logs:
        return []
    lo, hi = example.window
    brokers = [int(b) for b in example.leaders or [] if isinstance(b, int) and not isinstance(b, bool)]
    if not brokers:
        brokers = leaders_during(observations, example.fields.get("topic"), example.fields.get("partition"), lo, hi)
    return [{"text": e.node + (f" (broker {e.broker})" if e.broker is not None else ""), "href": f"#{e.anchor}"}
            for e in excerpts.around(hi, hi, brokers)]  # the log at its moment: the end of its window  # anchors are fixed when made; only the bounds grow


def excerpt_rows(excerpts: Excerpts, t0: int) -> list[dict[str, Any]]:
    """The excerpts made, for the page's log section, in the order the rows first linked them."""
    return [{"anchor": e.anchor, "node": e.node, "broker": e.broker, "from": fmt.rel(e.lo_ns, t0),
             "to": fmt.rel(e.hi_ns, t0), "from_utc": fmt.utc(e.lo_ns), "to_utc": fmt.utc(e.hi_ns),
             "text": "\n".join(e.lines), "left_out": e.left_out} for e in excerpts.cut_all()]

"""The observer: every `interval_s`, its broker's own view of the topic (and any extra topics), asked of that broker alone.

It runs inside the broker's node namespace and sends one Metadata request to
its broker (testbed.kafka.wire.broker_view, after an ApiVersions request on the
same connection that picks the Metadata version; before Kafka 2.1 the leader
epoch is null), so a network partition does not
blind it and no other broker's answer is mistaken for this one's. Each answer
becomes one ``observation`` line (leader, ISR, leader epoch per partition,
and the controller), with the high watermark and last stable offset of each
partition the broker leads (ListOffsets at both isolation levels; null where
it does not lead or does not answer). When the broker does not answer, it journals an
``unreachable`` line and no observation: an absent row means "no answer",
never "no leader". KRaft (`controller_port` set): the controller is not
Metadata's (a KRaft broker names a random live broker there) but what the
node's own KRaft controller says to DescribeQuorum: its broker id when that
controller believes it is the active one, else null (no claim), so two
observers naming two controllers at once are two controllers each believing
it leads. Runs until SIGTERM, then looks once more (the views at the stop).
"""

from __future__ import annotations

import json
import struct
import time

from testbed.kafka.quorum import describe_quorum
from testbed.kafka.wire import broker_view, end_offsets
from workloads import exits
from workloads.config import ObserverConfig
from workloads.journal import JournalSink
from workloads.lines import process_line
from workloads.stopping import StopFlag


class ObserverWorkload:
    def __init__(self, config: ObserverConfig, journal: JournalSink, stop: StopFlag) -> None:
        self.config = config
        self.journal = journal
        self.stop = stop
        self.name = f"broker-{config.broker_id}"
        self.observed = 0

    def observe_once(self) -> None:
        c = self.config
        topics = [c.topic, *c.extra_topics]
        try:
            view = broker_view(c.broker_host, c.broker_port, topics, timeout=min(2.0, max(0.2, c.interval_s)))
        except (OSError, struct.error, ValueError) as exc:
            self.journal.append({"kind": "unreachable", "t": time.time_ns(), "observer": self.name,
                                 "error": f"{type(exc).__name__}: {exc}"})
            return
        t = time.time_ns()
        if c.controller_port is not None:
            view.controller = self._leading_controller()
        partitions = []
        for topic in topics:
            seen = view.partitions.get(topic, [])
            ends = self._ends(topic, [p.partition for p in seen])
            partitions += [[topic, p.partition, p.leader, sorted(p.isr), p.leader_epoch, p.error,
                            *ends.get(p.partition, (None, None))] for p in seen]
        self.journal.append({"kind": "observation", "t": t, "observer": self.name, "broker": c.broker_id,
                             "controller": view.controller, "partitions": partitions})
        self.observed += 1

    def _leading_controller(self) -> int | None:
        """The broker id of this node's KRaft controller if it believes it leads the quorum, else None."""
        c = self.config
        assert c.controller_port is not None
        try:
            quorum = describe_quorum(c.broker_host, c.controller_port, timeout=min(2.0, max(0.2, c.interval_s)))
        except (OSError, struct.error, ValueError):
            return None
        return quorum.leader_id - c.controller_id_base if quorum.leading and quorum.leader_id is not None else None

    def _ends(self, topic: str, partitions: list[int]) -> dict[int, tuple[int | None, int | None]]:
        """The broker's high watermark and last stable offset per partition it leads; none if it does not say."""
        c = self.config
        if not partitions:
            return {}
        try:
            return end_offsets(c.broker_host, c.broker_port, topic, partitions,
                               timeout=min(2.0, max(0.2, c.interval_s)))
        except (OSError, struct.error, ValueError):
            return {}

    def run(self) -> int:
        c = self.config
        self.journal.append(process_line(c, {"broker_id": c.broker_id,
                                             "broker_address": f"{c.broker_host}:{c.broker_port}",
                                             "interval_s": c.interval_s}))
        self.journal.flush()
        next_due = time.monotonic()
        while not self.stop.requested:
            self.observe_once()
            self.journal.flush()
            next_due += c.interval_s
            delay = next_due - time.monotonic()
            if delay < 0:  # an answer took longer than the interval: do not try to catch up
                next_due, delay = time.monotonic(), 0.0
            self.stop.wait(delay)
        # One last look at the stop: the harness stops the observers once the healed cluster has settled and been
        # drained, so the history ends with the settled views. Without it a follower that rejoined the ISR within
        # the interval before the stop was never seen back (lossy-leader-link on 4.1.1: `isr-shrink-grow` not
        # observed, the ISR full 0.2 s after the last poll).
        self.observe_once()
        self.journal.append({"kind": "end", "t": time.time_ns(), "observations": self.observed})
        self.journal.flush()
        print(json.dumps({"process": c.process, "role": "observer", "observations": self.observed}), flush=True)
        return exits.DONE

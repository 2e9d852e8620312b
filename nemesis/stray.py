"""stray-transactional-produce: a transactional write the transaction coordinator never hears of (KAFKA-12671).

When it fires, the nemesis acts as a Kafka client of its own (raw protocol,
`testbed.kafka.txn_wire`): under a fresh transactional.id
(`<run prefix>-stray-<fault name>`) it asks that id's coordinator for a
producer id (InitProducerId: the id's state is then Empty, no transaction
begun), and sends one transactional record batch (sequence 0, acks=all) to
the leader of the spec's `partition` without AddPartitionsToTxn. A broker
that takes it (Kafka before 3.6, or with
`transaction.partition.verification.enable=false`) has a transaction open
in that partition from then on that neither a commit nor an abort marker will
ever close: the coordinator has no ongoing transaction to time out, so the
partition's last stable offset stays at the stray record and read_committed
readers of the partition stop there (KAFKA-12671's hanging transaction). A
broker that verifies (3.6 on, the default) refuses the batch with an error
code, journaled.

The fault's `start` row carries the write in `detail.stray` (`process`,
`value`, `txn`, `transactional_id`, `producer_id`, `producer_epoch`, `topic`,
`partition`, `offset`, `status`, `error`, `error_code`, `invoke_ns`,
`complete_ns`): the history builder turns it into the `writes` row, the
`transactions` row and the `processes` row the contract asks for
(workloads.history_stray). Undoing it does nothing: the transaction stays
open, which is the point.

Must never: write to a partition other than the spec's, or end the transaction it opens.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from nemesis.fault_base import FaultEnv, Injected
from testbed.errors import FaultError
from testbed.journal_names import STRAY_PRODUCE
from testbed.kafka import txn_wire
from testbed.kafka.config import BROKER_PORT

if TYPE_CHECKING:
    from nemesis.fault_spec import FaultSpec
    from nemesis.targets import Resolver

COORDINATOR_WAIT_S = 15.0
RETRIABLE_INIT = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
UNKNOWN_OUTCOME = (7,)  # REQUEST_TIMED_OUT: maybe written (acks=all not reached in time)
TRANSACTION_TIMEOUT_MS = 60000  # never used: no transaction is ever begun at the coordinator


def stray_process(name: str) -> str:
    """The writer's name in the history: `stray-<fault name>` (the name itself where it already says stray)."""
    return name if name.startswith("stray") else f"stray-{name}"


class StrayProduceFault:
    def inject(self, spec: FaultSpec, resolver: Resolver, env: FaultEnv, key: str) -> Injected:
        cluster = env.cluster
        topic, partition = cluster.settings.topic, spec.partition
        leader = resolver.node("leader")
        process = stray_process(key)
        transactional_id = f"{cluster.runtime.prefix}-{process}"
        coordinator, producer_id, epoch = _producer_id(cluster, transactional_id)
        value, txn = f"{process}-0", f"{process}-t0"
        invoke_ns = time.time_ns()
        batch = txn_wire.record_batch(producer_id, epoch, 0, [(None, value.encode())], invoke_ns // 1_000_000)
        try:
            code, offset = txn_wire.produce(leader.address, BROKER_PORT, transactional_id, topic, partition, batch)
            status = "ok" if code == 0 else "info" if code in UNKNOWN_OUTCOME else "fail"
            error = None if code == 0 else txn_wire.error_name(code)
        except (OSError, ConnectionError, ValueError) as exc:  # sent, maybe written: no answer
            code, offset, status, error = None, -1, "info", f"{type(exc).__name__}: {exc}"
        complete_ns = time.time_ns()
        stray = {"process": process, "value": value, "txn": txn, "transactional_id": transactional_id,
                 "producer_id": producer_id, "producer_epoch": epoch, "topic": topic, "partition": partition,
                 "offset": offset if status == "ok" and offset >= 0 else None, "status": status, "error": error,
                 "error_code": code, "invoke_ns": invoke_ns, "complete_ns": complete_ns}
        targets = {"topic": topic, "partition": partition, "brokers": [leader.broker_id],
                   "coordinator": coordinator, "process": process}
        return Injected(key, STRAY_PRODUCE, targets, {"stray": stray})

    def undo(self, injected: Injected, env: FaultEnv) -> None:
        """Nothing to undo: no marker will ever close the stray transaction."""


def _producer_id(cluster: Any, transactional_id: str) -> tuple[int, int, int]:
    """(coordinator broker, producer id, epoch) for `transactional_id`, retried while its coordinator loads or
    moves; FaultError (nothing written) if none answers within COORDINATOR_WAIT_S."""
    deadline = time.monotonic() + COORDINATOR_WAIT_S
    last = "no broker names a coordinator"
    while time.monotonic() < deadline:
        broker = cluster.txn_coordinator(transactional_id)
        node = next((n for n in cluster.plan.nodes if n.broker_id == broker), None)
        if node is not None:
            try:
                code, producer_id, epoch = txn_wire.init_producer_id(node.address, BROKER_PORT, transactional_id,
                                                                     TRANSACTION_TIMEOUT_MS)
                if code == 0:
                    return node.broker_id, producer_id, epoch
                last = f"InitProducerId at broker {node.broker_id}: {txn_wire.error_name(code)}"
                if code not in RETRIABLE_INIT:
                    break
            except (OSError, ConnectionError, ValueError) as exc:
                last = f"InitProducerId at broker {node.broker_id}: {exc}"
        time.sleep(0.25)
    raise FaultError(f"{STRAY_PRODUCE}: no producer id for {transactional_id}: {last}")


STRAY_FAULT = StrayProduceFault()

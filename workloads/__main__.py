"""`python -m workloads CONFIG.json`: run one workload process until it is done or stopped.

Exit status (workloads.exits): 0 done, 1 failed (bad config, fatal client
error, a bug: one line on stderr says why, and the journal gets a ``crash``
line), 2 the drain did not finish, 3 a usage error (not one argument).
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

from workloads import exits
from workloads.config import (
    AnyConfig,
    ConfigError,
    ConsumerConfig,
    DrainConfig,
    ObserverConfig,
    TransformerConfig,
    load_config,
)
from workloads.journal import Journal, JournalSink, NullJournal
from workloads.stopping import StopFlag


def open_journal(config: AnyConfig) -> JournalSink:
    if not config.journal_enabled:
        return NullJournal()
    return Journal(config.journal, config.fsync_interval_s)


def supervised(config: AnyConfig) -> bool:
    """Whether `config`'s process runs as instances under the supervisor (workloads/supervisor.py)."""
    return isinstance(config, TransformerConfig) or (isinstance(config, ConsumerConfig) and config.kill_every_s > 0)


def run(config: AnyConfig, journal: JournalSink, stop: StopFlag) -> int:
    """Run the workload of `config`'s role; its exit status."""
    # Imported here so an observer (which needs no librdkafka) and a bad config start fast.
    if isinstance(config, ObserverConfig):
        from workloads.observer import ObserverWorkload
        return ObserverWorkload(config, journal, stop).run()
    if isinstance(config, TransformerConfig) or (isinstance(config, ConsumerConfig) and supervised(config)):
        from workloads.supervisor import run_supervised
        return run_supervised(config, stop)
    if isinstance(config, ConsumerConfig):
        from workloads.consumer import ConsumerWorkload
        return ConsumerWorkload(config, journal, stop).run()
    if isinstance(config, DrainConfig):
        from workloads.drain import DrainWorkload
        return DrainWorkload(config, journal, stop).run()
    if config.proxy is not None:  # its connections go through a request-holding proxy of its own
        from workloads.holdproxy import HoldProxy
        HoldProxy({int(p): u for p, u in config.proxy["listen"].items()}, Path(config.proxy["control"]),
                  Path(config.proxy["events"])).start()
    if config.transactional_id is not None:
        from workloads.txn_producer import TxnProducerWorkload
        return TxnProducerWorkload(config, journal, stop).run()
    from workloads.producer import ProducerWorkload
    return ProducerWorkload(config, journal, stop).run()


def one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m workloads CONFIG.json", file=sys.stderr)
        return exits.USAGE
    try:
        config = load_config(Path(args[0]))
    except ConfigError as exc:
        print(f"workload config {args[0]}: {exc}", file=sys.stderr)
        return exits.FAILED
    stop = StopFlag().install()
    if isinstance(config, TransformerConfig) or (isinstance(config, ConsumerConfig) and supervised(config)):
        from workloads.supervisor import run_supervised
        return run_supervised(config, stop)
    try:
        journal = open_journal(config)
    except OSError as exc:
        print(f"{config.process}: cannot open journal {config.journal}: {one_line(exc)}", file=sys.stderr)
        return exits.FAILED
    try:
        return run(config, journal, stop)
    except Exception as exc:
        reason = one_line(exc)
        try:
            journal.append({"kind": "crash", "t": time.time_ns(), "error": reason,
                            "traceback": traceback.format_exc()})
            journal.flush()
        except OSError:
            pass
        print(f"{config.process}: {reason}", file=sys.stderr)
        return exits.FAILED
    finally:
        journal.close()


if __name__ == "__main__":
    sys.exit(main())

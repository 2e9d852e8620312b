"""Which offset-commit outcomes are `ok`, `fail` (definitely not stored) or `info` (unknown), per contract v3.

`fail` is a claim that the group coordinator refused the commit and stored
nothing, so it is made only for the errors whose meaning is exactly that: the
coordinator checked the committing member against the group's current state
before writing anything to `__consumer_offsets` (Kafka's GroupCoordinator
handleCommitOffsets / the KIP-848 group coordinator's OffsetCommit
validation) and answered with one of these. Every other error, a timeout
above all, leaves the outcome unknown: the coordinator may have appended the
offsets before the answer was lost. A commit whose process ended before its
outcome came is `info` as well (the history builder decides that).

Must never: name an error `fail` that a coordinator can return after it has
appended the offsets.
"""

from __future__ import annotations

from workloads.classify import Status

# Errors that say the coordinator refused the commit before storing anything. Each entry says why.
REFUSED: dict[str, str] = {
    "ILLEGAL_GENERATION": "classic protocol: the commit names a generation the group has left behind (a "
                          "rebalance completed without this member); validated before the append",
    "UNKNOWN_MEMBER_ID": "the member id is not in the group (expired past session.timeout.ms, or fenced); "
                         "validated before the append, classic and consumer protocol alike",
    "REBALANCE_IN_PROGRESS": "classic protocol: the group is rebalancing and this member has not rejoined; "
                             "an eager member's commit is refused until the new generation",
    "FENCED_INSTANCE_ID": "static membership: another instance took this group.instance.id; refused",
    "STALE_MEMBER_EPOCH": "consumer protocol (KIP-848): the commit's member epoch is older than the member's "
                          "current one; refused before the append",
}

# Errors that leave the outcome unknown, listed to document why; every unlisted error is unknown too.
MAYBE_STORED: dict[str, str] = {
    "REQUEST_TIMED_OUT": "the coordinator may have appended the offsets and failed to replicate them in time",
    "_TIMED_OUT": "librdkafka gave up waiting: the request may have reached the coordinator",
    "_TRANSPORT": "the connection broke with the request possibly sent",
    "COORDINATOR_NOT_AVAILABLE": "also answered when the offsets' append failed after it was attempted",
    "NOT_COORDINATOR": "the coordinator moved; a retry elsewhere may or may not have stored the offsets",
    "COORDINATOR_LOAD_IN_PROGRESS": "the new coordinator is loading; librdkafka may have retried",
    "_WAIT_COORD": "librdkafka had no coordinator to send to: nothing sent by this attempt, but an earlier "
                   "retry of the same commit may have been",
    "_DESTROY": "the consumer was closed with the commit outstanding",
}


def classify_commit(error: str | None) -> tuple[Status, str | None]:
    """Status and error name of one partition's commit outcome; `error` is librdkafka's error name or None."""
    if error is None:
        return "ok", None
    if error in REFUSED:
        return "fail", error
    return "info", error

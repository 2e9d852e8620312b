"""Which send outcomes are `ok`, `fail` (definitely not written) or `info` (unknown), per spec/history.md.

`fail` is a claim that the value can never appear in the log, so it is made
only where the error proves it. Two facts decide (both checked in
librdkafka's source, src/rdkafka_request.c and src/rdkafka_msg.c, v2.x):

1. The Python binding gives a delivery report's error code only. librdkafka
   also tracks a per-message persistence status (rd_kafka_message_status():
   NOT_PERSISTED / POSSIBLY_PERSISTED / PERSISTED), but confluent-kafka does
   not expose it (its Message has no status(); the pull request that would
   have added it, confluentinc/confluent-kafka-python#529, was closed
   unmerged, and 2.16.1 has none).
2. The error in a delivery report is the *last* attempt's. A message whose
   earlier attempt timed out in flight (possibly persisted) is retried, and
   librdkafka never downgrades its status back to NOT_PERSISTED ("Don't
   downgrade a message from any form of PERSISTED to NOT_PERSISTED",
   rd_kafka_retry_msgq / rd_kafka_msgq_set_metadata). So a final
   NOT_ENOUGH_REPLICAS after retries says nothing about the earlier attempt.
   Only with retries=0 is the last attempt the only attempt that could have
   reached a broker (retries that do not count, such as after
   NOT_LEADER_FOR_PARTITION or a request that never left the client, are
   exactly the attempts librdkafka marks NOT_PERSISTED).

Hence: an error in `NOT_WRITTEN_BY_ATTEMPT` is `fail` only when the producer
runs with retries=0; everything else is `info`. Note that librdkafka turns
both in-queue and in-flight timeouts into `_MSG_TIMED_OUT` before the
application sees them (rd_kafka_handle_Produce_error), so `_MSG_TIMED_OUT`
is always `info`. A produce() call that raises never handed the message to
librdkafka: that is always `fail`.
"""

from __future__ import annotations

from typing import Literal

Status = Literal["ok", "fail", "info"]

# Errors that prove the attempt that returned them wrote nothing. Each entry says why.
NOT_WRITTEN_BY_ATTEMPT: dict[str, str] = {
    "NOT_ENOUGH_REPLICAS": "the leader checks ISR size against min.insync.replicas before appending "
                           "(Partition.appendRecordsToLeader); after an append it answers "
                           "NOT_ENOUGH_REPLICAS_AFTER_APPEND instead; librdkafka: MSG_NOT_PERSISTED",
    "MSG_SIZE_TOO_LARGE": "RecordTooLarge: the batch is refused by validation before the append",
    "RECORD_LIST_TOO_LARGE": "the batch is refused by validation before the append",
    "INVALID_MSG": "CorruptRecord: CRC validation fails before the append",
    "INVALID_RECORD": "LogValidator refuses the batch before the append",
    "_INVALID_DIFFERENT_RECORD": "librdkafka: the whole batch was refused because another record in it was invalid",
    "INVALID_REQUIRED_ACKS": "the request is refused before any append",
    "TOPIC_AUTHORIZATION_FAILED": "authorization is checked before any append",
    "_TIMED_OUT_QUEUE": "librdkafka: timed out in its queue, never sent (MSG_NOT_PERSISTED)",
    "_PURGE_QUEUE": "librdkafka: purged from its queue by purge(), never sent in this attempt",
    "_UNKNOWN_PARTITION": "librdkafka: the partition does not exist in the metadata; never sent",
    "_UNKNOWN_TOPIC": "librdkafka: the topic does not exist in the metadata; never sent",
}

# Errors that leave the outcome unknown, listed to document why; every unlisted error is unknown too.
MAYBE_WRITTEN: dict[str, str] = {
    "_MSG_TIMED_OUT": "delivery.timeout.ms expired; librdkafka reports in-flight and in-queue "
                      "timeouts alike as this code, so a request may have been appended",
    "_TIMED_OUT": "a request timed out in flight: the broker may have appended it",
    "REQUEST_TIMED_OUT": "the broker appended but the ISR did not acknowledge within request.timeout.ms",
    "_TRANSPORT": "the connection broke with the request possibly sent (MSG_POSSIBLY_PERSISTED)",
    "NOT_LEADER_FOR_PARTITION": "NOT_LEADER_OR_FOLLOWER: also returned by a delayed produce whose "
                                "leader lost leadership after appending (checkEnoughReplicasReachOffset)",
    "LEADER_NOT_AVAILABLE": "leadership in flux; treated like NOT_LEADER_FOR_PARTITION",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "the leader appended, then the ISR shrank below min.insync.replicas",
    "KAFKA_STORAGE_ERROR": "also returned by a delayed produce when the partition went offline after appending",
    "UNKNOWN_TOPIC_OR_PART": "also returned by a delayed produce when the replica was removed after appending",
    "_PURGE_INFLIGHT": "purged while in flight: the request may have been appended (MSG_POSSIBLY_PERSISTED)",
    "OUT_OF_ORDER_SEQUENCE_NUMBER": "idempotence: sequence gap, earlier batches' fate unknown",
    "DUPLICATE_SEQUENCE_NUMBER": "idempotence: the broker already has this batch",
    "UNKNOWN_PRODUCER_ID": "idempotence: producer state lost on the broker; earlier attempts' fate unknown",
    "INVALID_PRODUCER_EPOCH": "idempotence: fenced; earlier attempts' fate unknown",
    "_FATAL": "the producer hit a fatal error; queued and in-flight messages' fate unknown",
    "_GAPLESS_GUARANTEE": "idempotence: a batch failed; this one's fate unknown",
    "_DESTROY": "the producer was destroyed with the message outstanding",
    "_BAD_MSG": "an unparsable response: the broker may have appended",
}


def classify_delivery(error: str | None, retries: int) -> tuple[Status, str | None]:
    """Status and error name of a delivery report, given the producer's effective `retries`.

    `error` is librdkafka's error name (KafkaError.name()), None for success.
    """
    if error is None:
        return "ok", None
    if error in NOT_WRITTEN_BY_ATTEMPT and retries == 0:
        return "fail", error
    return "info", error


def classify_refused(error: str) -> tuple[Status, str]:
    """produce() raised: librdkafka never took the message, so it cannot have been written."""
    return "fail", error

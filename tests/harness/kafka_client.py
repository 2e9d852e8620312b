"""A tiny Kafka client run inside a client host by the foundation tests.

`python kafka_client.py produce BOOTSTRAP TOPIC N PREFIX` prints a JSON list of acknowledged values;
`python kafka_client.py consume BOOTSTRAP TOPIC PARTITIONS` prints every value up to the high watermark.
"""

from __future__ import annotations

import json
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def produce(bootstrap: str, topic: str, n: int, prefix: str) -> list[str]:
    acked: list[str] = []

    def report(err: object, msg: object) -> None:
        if err is None:
            acked.append(msg.value().decode())  # type: ignore[attr-defined]

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(n):
        producer.produce(topic, value=f"{prefix}{i}".encode(), on_delivery=report)
        producer.poll(0)
    producer.flush(60)
    return acked


def consume(bootstrap: str, topic: str, partitions: int) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    ends = {
        p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)
    }
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[str] = []
    position = {p: 0 for p in range(partitions)}
    deadline = time.monotonic() + 60
    while any(position[p] < ends[p] for p in ends) and time.monotonic() < deadline:
        for msg in consumer.consume(500, timeout=1.0):
            if msg.error() is None:
                values.append(msg.value().decode())
                position[msg.partition()] = msg.offset() + 1
    consumer.close()
    return values


if __name__ == "__main__":
    command, bootstrap, topic, *rest = sys.argv[1:]
    if command == "produce":
        print(json.dumps(produce(bootstrap, topic, int(rest[0]), rest[1])))
    else:
        print(json.dumps(consume(bootstrap, topic, int(rest[0]))))

"""librdkafka #4208 in isolation, run by a client under test's Python (tests/scenarios/test_batch_pause_probe.py).

On librdkafka's in-process mock cluster: two partitions written continuously, one consumer assigned both
gathering with consume(500, 0.3) while another thread pauses partition 0 for 20 ms every 170 ms. Prints one JSON
line: how many records were read, and per partition how many offsets the application was never handed (jumps in
the offsets it was handed) and how many it was handed twice.
"""

import json
import os
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition, libversion

TOPIC, PARTITIONS = "t", 2
RUN_S = float(sys.argv[1]) if len(sys.argv) > 1 else 6.0


def main() -> None:
    producer = Producer({"test.mock.num.brokers": 1, "linger.ms": 5})
    broker = next(iter(producer.list_topics(timeout=5).brokers.values()))
    stop = threading.Event()

    def produce() -> None:
        i = 0
        while not stop.is_set():
            for _ in range(20):
                producer.produce(TOPIC, value=b"v%d" % i, partition=i % PARTITIONS)
                i += 1
            producer.poll(0)
            time.sleep(0.01)

    consumer = Consumer({"bootstrap.servers": f"{broker.host}:{broker.port}", "group.id": "probe",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])

    def pause_and_resume() -> None:
        time.sleep(1)
        while not stop.is_set():
            consumer.pause([TopicPartition(TOPIC, 0)])
            time.sleep(0.02)
            consumer.resume([TopicPartition(TOPIC, 0)])
            time.sleep(0.15)

    threading.Thread(target=produce, daemon=True).start()
    threading.Thread(target=pause_and_resume, daemon=True).start()
    last = dict.fromkeys(range(PARTITIONS), -1)
    skipped, repeated, read = dict.fromkeys(range(PARTITIONS), 0), dict.fromkeys(range(PARTITIONS), 0), 0
    end = time.monotonic() + RUN_S
    while time.monotonic() < end:
        for msg in consumer.consume(500, 0.3):
            if msg.error() is not None:
                continue
            p, o = msg.partition(), msg.offset()
            read += 1
            skipped[p] += max(0, o - last[p] - 1)
            repeated[p] += o <= last[p]
            last[p] = max(last[p], o)
    stop.set()
    print(json.dumps({"librdkafka": libversion()[0], "read": read, "skipped": skipped, "repeated": repeated}),
          flush=True)
    os._exit(0)  # some of these clients hang in close(); nothing is left to journal


if __name__ == "__main__":
    main()

# expect: quiet
# why: the same shipper after the fix: 64 KiB batches, half a second of linger.
import json

from kafka import KafkaProducer

CONF = {
    "bootstrap_servers": ["kafka-1:9092", "kafka-2:9092"],
    "batch_size": 64 * 1024,  # bytes
    'linger_ms': 500,
    "acks": 1,
}

producer = KafkaProducer(value_serializer=lambda v: json.dumps(v).encode("utf-8"), **CONF)


def ship(topic, records):
    for r in records:
        producer.send(topic, r)

# expect: warning
# evidence: batch_size=20
# why: the API servers' log shipper: batch_size=20 was meant as "20 log lines"
# but is 20 bytes, and kafka-python lingers 0 ms unless told, so every log
# line (30+ per API request) went out as its own produce request.
import json
import logging

from kafka import KafkaProducer

log = logging.getLogger(__name__)

producer = KafkaProducer(
    bootstrap_servers=["kafka-1:9092", "kafka-2:9092"],
    value_serializer=lambda v: json.dumps(v).encode("utf-8"),
    batch_size=20,  # flush every 20 logs
    acks=1,
)


def ship(topic, records):
    for r in records:
        producer.send(topic, r)

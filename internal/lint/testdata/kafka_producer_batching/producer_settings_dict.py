# expect: warning
# evidence: batch_size=16
# why: kafka-python settings kept in a dict, batch_size written as "16 KiB";
# no linger_ms, so kafka-python's 0 ms applies.
from kafka import KafkaProducer

SETTINGS = {
    'bootstrap_servers': 'kafka-1:9092',
    'batch_size': 16,  # KiB
    'acks': 'all',
}

producer = KafkaProducer(**SETTINGS)


def emit(event):
    producer.send('events', event)

KafkaProducer(batch_size=20, linger_ms='0

KafkaProducer(batch_size=20, client_id=']0;pwned[2J[31m')

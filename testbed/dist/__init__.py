"""The software the hosts run, fetched and prepared on this machine: the Kafka distribution and its class-data archives."""

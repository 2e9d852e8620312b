"""faultline's runner: cluster runtimes, Kafka lifecycle, runs and the CLI (`python -m harness`)."""

"""Cross-run analysis: the results lake (`python -m spark_analysis ingest`), its notebook, Spark beyond one machine."""

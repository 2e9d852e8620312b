"""The derived schemas are exactly the ones written literally before the contract was declared once.

A one-off guard for the change that derived them (issue 23): the Parquet files the workloads
write and the lake's tables keep byte-identical schemas. Removed once it passed.
"""

from __future__ import annotations

import pyarrow as pa

from spark_analysis import schema as lake
from workloads.tables import SCHEMAS

OLD_WORKLOAD_SCHEMAS = {
    "writes": [("process", "string", False), ("op_id", "int64", False), ("topic", "string", False), ("key", "string"), ("value", "string", False), ("partition", "int32"), ("offset", "int64"), ("status", "string", False), ("error", "string"), ("invoke_ns", "int64", False), ("complete_ns", "int64"), ("az", "string")],  # noqa: E501
    "reads": [("process", "string", False), ("seq", "int64", False), ("phase", "string", False), ("topic", "string", False), ("partition", "int32", False), ("offset", "int64", False), ("key", "string"), ("value", "string", False), ("leader_epoch", "int32"), ("poll_ns", "int64", False), ("az", "string"), ("group", "string")],  # noqa: E501
    "processes": [("process", "string", False), ("role", "string"), ("az", "string"), ("config", "string")],
    "observations": [("time_ns", "int64", False), ("observer", "string", False), ("topic", "string"), ("partition", "int32"), ("leader", "int32"), ("isr", "string"), ("leader_epoch", "int32"), ("controller", "int32")],  # noqa: E501
    "nemesis": [("time_ns", "int64", False), ("type", "string", False), ("fault", "string"), ("targets", "string"), ("detail", "string")],  # noqa: E501
}
OLD_LAKE_SCHEMAS = {
    "anomalies": [("run_id", "string"), ("scenario", "string"), ("day", "string"), ("anomaly", "string"), ("classified", "string"), ("instance_index", "int64"), ("value", "string"), ("topic", "string"), ("partition", "int64"), ("offset", "int64"), ("process", "string"), ("prev_value", "string"), ("prev_offset", "int64"), ("time_ns", "int64"), ("t_s", "double"), ("faults", "string")],  # noqa: E501
    "throughput": [("run_id", "string"), ("scenario", "string"), ("day", "string"), ("az", "string"), ("second", "int64"), ("ok", "int64"), ("fail", "int64"), ("info", "int64"), ("faults", "string")],  # noqa: E501
    "availability": [("run_id", "string"), ("scenario", "string"), ("day", "string"), ("fault_index", "int64"), ("fault", "string"), ("targets", "string"), ("az", "string"), ("targeted", "bool"), ("start_s", "double"), ("stop_s", "double"), ("acks_during", "int64"), ("first_ack_after_start_s", "double"), ("longest_gap_s", "double"), ("first_ack_after_heal_s", "double")],  # noqa: E501
    "faults": [("run_id", "string"), ("scenario", "string"), ("day", "string"), ("fault_index", "int64"), ("fault", "string"), ("targets", "string"), ("start_ns", "int64"), ("stop_ns", "int64"), ("start_s", "double"), ("stop_s", "double"), ("duration_s", "double")],  # noqa: E501
    "leadership": [("run_id", "string"), ("scenario", "string"), ("day", "string"), ("topic", "string"), ("partition", "int64"), ("observer", "string"), ("leader", "int64"), ("leader_epoch", "int64"), ("isr", "string"), ("start_s", "double"), ("end_s", "double")],  # noqa: E501
}


def _schema(fields: list[tuple]) -> pa.Schema:
    return pa.schema([pa.field(f[0], pa.type_for_alias(f[1]), nullable=f[2] if len(f) > 2 else True) for f in fields])


def test_the_workloads_write_the_same_arrow_schemas_as_before() -> None:
    assert set(SCHEMAS) == set(OLD_WORKLOAD_SCHEMAS)
    for name, fields in OLD_WORKLOAD_SCHEMAS.items():
        assert SCHEMAS[name].equals(_schema(fields), check_metadata=True), name


def test_the_lake_tables_keep_their_schemas() -> None:
    for name, fields in OLD_LAKE_SCHEMAS.items():
        assert lake.TABLES[name].equals(_schema(fields), check_metadata=True), name

"""Group consumers in a spec (contract v3): commit modes, processing time, kills, and the one-line refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.spec import parse_spec
from testbed.errors import SpecError
from tests.conftest import faultline


def spec_with(**consumer: Any) -> dict[str, Any]:
    return {"name": "t", "workloads": {"producers": [{"azs": ["az1"]}],
                                       "consumers": [{"mode": "group", **consumer}]}}


BAD = [
    ({"commit": "sync"}, "workloads.consumers[0].commit: must be one of before, after, auto, none, got 'sync'"),
    ({"commit": "auto", "settings": {"enable.auto.commit": False}},
     "workloads.consumers[0].settings.enable.auto.commit: false contradicts commit auto"),
    ({"commit": "before", "settings": {"enable.auto.commit": True}},
     "workloads.consumers[0].settings.enable.auto.commit: true contradicts commit before"),
    ({"commit": "after", "settings": {"enable.auto.commit": "true"}},
     "workloads.consumers[0].settings.enable.auto.commit: true contradicts commit after"),
    ({"mode": "assign", "commit": "after"}, "workloads.consumers[0].commit: only a group consumer (mode: group)"),
    ({"mode": "assign", "processing_ms": 10},
     "workloads.consumers[0].processing_ms: only a group consumer (mode: group)"),
    ({"mode": "assign", "group": "g"}, "workloads.consumers[0].group: only a group consumer (mode: group)"),
    ({"processing_ms": -1}, "workloads.consumers[0].processing_ms: must be >= 0"),
]


@pytest.mark.parametrize("consumer, says", BAD)
def test_bad_group_consumers_name_the_key(consumer: dict[str, Any], says: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_spec(spec_with(**consumer))
    assert str(err.value).startswith(says), err.value


def test_an_agreeing_enable_auto_commit_is_dropped_and_the_plan_carries_the_group_keys(tmp_path: Path) -> None:
    from harness.workloadset import drain_workloads, member_groups, plan_workloads
    from testbed.addressing import make_plan
    from testbed.kafka.cluster import KafkaCluster
    from testbed.kafka.config import ClusterSettings
    from testbed.runfolder import RunFolder
    from workloads.config import ConsumerConfig, DrainConfig, config_to_json, parse_config

    spec = parse_spec(spec_with(commit="before", processing_ms=50, kill_every_s=4, kill_first_s=3, per_az=1,
                                settings={"enable.auto.commit": False, "session.timeout.ms": 6000}))
    assert spec.consumers[0].settings == {"session.timeout.ms": 6000}

    class NoRuntime:  # plan_workloads only reads the plan and the run folder
        plan = make_plan()

    cluster = KafkaCluster(NoRuntime(), ClusterSettings(), RunFolder(tmp_path))  # type: ignore[arg-type]
    members = [w.config for w in plan_workloads(spec, cluster) if isinstance(w.config, ConsumerConfig)]
    assert [(m.commit, m.processing_ms, m.group) for m in members] == [("before", 50, "faultline-g0")] * 3
    # one member killed every 4 s, in turn: each every 12 s, the first at 3 s, the next 4 s later
    assert [(m.kill_first_s, m.kill_every_s) for m in members] == [(3.0, 12.0), (7.0, 12.0), (11.0, 12.0)]
    drains = [w.config for w in drain_workloads(cluster, 30.0, groups=member_groups(spec))]
    assert [d.groups for d in drains if isinstance(d, DrainConfig)] == [("faultline-g0",), (), ()]
    for config in [*members, *drains]:
        assert config is not None and parse_config(config_to_json(config)) == config


def test_a_bad_commit_mode_stops_the_cli_in_one_line_before_anything(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(yaml.safe_dump(spec_with(commit="eventually")))
    proc = faultline("run", str(spec), "--results", str(tmp_path / "results"), timeout=60)
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "workloads.consumers[0].commit: must be one of before, after, auto, none" in lines[0]
    assert not (tmp_path / "results").exists()

"""The names a run's journals carry that more than one layer writes or reads: fault names and client processes.

The nemesis table's `fault` column is mostly the fault kinds of the nemesis' registry
(`nemesis/registry.py`), but some of its names are written elsewhere: a power-off the cluster
reports as a power cut (`testbed/kafka/cluster.py`), a transformer killed by its own supervisor
(`workloads/history_transformer.py`), the nemesis' own heal (`nemesis/nemesis.py`), and the stray
write the history builder turns into rows (`workloads/history_stray.py`). They live here, on the
floor, so the nemesis, the workloads and the report use one spelling without importing each
other. The client processes are named here too (`producer-az1-0`): the harness names them when
it plans the workloads and checks the spec's faults against them, the nemesis validates the
faults that name one.

Must never: import anything of this project, or hold a name only one module uses.
"""

from __future__ import annotations

import re

POWER_OFF = "power-off"  # a node's processes died at one instant, its page cache kept
POWER_CUT = "power-cut"  # a power-off that dropped the node's unsynced writes (journaled for `power-off`)
STRAY_PRODUCE = "stray-transactional-produce"  # the nemesis' own transactional write (its start row holds it)
KILL_CLIENT = "kill-client"  # a supervisor (a transformer's or a group consumer's) killed the instance, until the next started
HEAL_ALL = "heal-all"  # the nemesis' `info` row of a heal of everything

# A producer process of the spec, as `client_process("producer", az, n)` names it.
PRODUCER_PATTERN = r"producer-az[1-9]-[0-9]+"
PRODUCER_RE = re.compile(rf"^{PRODUCER_PATTERN}$")
# A consumer process of the spec (`consumer-az1-0`), which a fault on a workload process may name too.
CONSUMER_RE = re.compile(r"^consumer-az[1-9]-[0-9]+$")
# The workload processes a fault may name, by role (a fault kind's record says which roles it takes).
WORKLOAD_RES = {"producer": PRODUCER_RE, "consumer": CONSUMER_RE}


def client_process(role: str, az: str, n: int) -> str:
    """The name of the `n`th client process of `role` (`producer`, `consumer`, `transformer`) in `az`, counted
    per role and AZ over the spec's groups in order: `producer-az1-0`."""
    return f"{role}-{az}-{n}"


def producer_process(az: str, n: int) -> str:
    """The `n`th producer process of `az`: `producer-az1-0`."""
    return client_process("producer", az, n)

"""Faults as data, applied to a live cluster through a runtime, on a schedule.

`registry` (one record per fault kind: what everything else reads about a
kind), `fault_spec` (a fault as validated data), `spec` (validation),
`fault_schema` (the JSON Schema of the `nemesis` key), `shapes` (pure
partitions and their rules), `links` (degraded links), `schedule` (timelines
and random chaos), `targets` (selectors resolved at fire time), `firewall`
(partitions applied on every host at once), `fault_base` (the `Fault`
contract), `faults`, `workload_faults`, `stray` and `disk_faults` (each
category's inject and undo), `fault_words` (each kind in words, for the report), `journal` (the
`nemesis` history table) and `nemesis` (the `Nemesis` that ties them
together). Import from the submodules: this package imports nothing, and the
spec parser and the registry never import the cluster code at run time (the
implementations name it only for type checking).

Must never: import a submodule here.
"""

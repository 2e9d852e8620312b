"""Faults as data, applied to a live cluster through a runtime, on a schedule.

`shapes` (pure partitions and their rules), `spec` (fault specs),
`schedule` (timelines and random chaos), `targets` (selectors resolved at
fire time), `firewall` (partitions applied on every host at once), `faults`
(each kind's inject and undo), `journal` (the `nemesis` history table) and
`nemesis` (the `Nemesis` that ties them together). Import from the submodules:
this package imports nothing, so the spec parser can use `nemesis.schedule`
without pulling in the cluster code.
"""

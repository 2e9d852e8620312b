"""Client workload processes: producers, consumers, the final drain and broker observers.

Each workload is one OS process, started by the harness inside a host's
network namespace as ``python -m workloads CONFIG.json``. It records what it
did in its own append-only JSONL journal; `workloads.history.build_history`
turns a run's journals into the contract tables of spec/history.md.

A workload never talks to the harness except through its journal, its exit
status (0 done, 1 failed, 2 drain incomplete; see `workloads.exits`) and one
summary line on stdout; it never touches another process or another journal.
"""

"""What of a run is still on the machine, found independently of the harness's own bookkeeping."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def remaining(prefix: str) -> list[str]:
    """Every namespace, interface, root iptables chain and process that carries `prefix`."""
    found: list[str] = []
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split("\n")
    found += [f"namespace {line.split()[0]}" for line in ns if line.startswith(prefix)]
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout.splitlines()
    found += [f"link {line.split(':')[1].strip()}" for line in links if prefix in line.split(":")[1]]
    chains = subprocess.run(["iptables", "-S"], capture_output=True, text=True).stdout.splitlines()
    found += [f"chain {c}" for c in chains if prefix in c]
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if f"FAULTLINE_RUN={prefix}".encode() in environ and stat.rsplit(")", 1)[1].split()[0] != "Z":
            found.append(f"process {pid}")
    return found

"""Link shaping on ssh hosts without SSH: `ssh_links`' host-side scripts run here, through a connection that runs
commands locally, against stub `tc` and `ip` that keep each device's root qdisc in files."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from testbed.addressing import Host
from testbed.errors import RuntimeFailure
from testbed.runtime import ssh_preflight
from testbed.runtime.base import RUN_ENV, LinkShaping, new_prefix
from testbed.runtime.ssh_links import HANDLE, SshLinks, owned_batch, unshape_command

TC = r'''#!/bin/sh
echo "tc $*" >> "$STUBS/tc.log"
case "$1 $2" in
  "qdisc show") cat "$STUBS/qdisc.$4" 2>/dev/null || echo "qdisc noqueue 0: root refcnt 2" ;;
  "qdisc del") [ -f "$STUBS/qdisc.$4" ] || { echo "Cannot delete qdisc with handle of zero." >&2; exit 2; }
               rm -f "$STUBS/qdisc.$4" ;;
  "-batch -") while read -r verb what dev name rest; do
                echo "batch $verb $what $dev $name $rest" >> "$STUBS/tc.log"
                [ "$verb $what $rest" = "qdisc add root handle HANDLE: htb" ] && echo "qdisc htb HANDLE: root" > "$STUBS/qdisc.$name"
              done; exit 0 ;;
esac
'''.replace("HANDLE", HANDLE)
IP = r'''#!/bin/sh
case $4 in 10.9.*) echo "$4 via 10.0.0.1 dev eth1 src 10.9.0.5 uid 0";; *) echo "$4 dev eth0 src 10.0.1.11 uid 0";; esac
'''
# Stands in for delayq: says `ready` (or fails as a host without NFQUEUE would), then waits for SIGTERM.
FAKE_DELAYQ = ("import signal, sys, time\n"
               "if 'fail' in sys.argv: print('delayq: binding NFQUEUE 1: Operation not permitted'); sys.exit(3)\n"
               "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0)); print('ready', flush=True)\n"
               "while True: time.sleep(1)\n")


class Entry:
    sudo = False
    name = "az1-node"


class LocalConn:
    """`SshConnection`'s run/check, run here by sh with the stubs first on PATH."""

    def __init__(self, stubs: Path) -> None:
        self.host = Entry()
        self.env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "STUBS": str(stubs)}
        self.commands: list[tuple[str, bool]] = []

    def run(self, command: str, *, timeout: float = 30.0, stdin: bytes | None = None, retry: bool = True,
            sudo: bool = False) -> tuple[int, bytes, bytes]:
        self.commands.append((command, sudo))
        proc = subprocess.run(["sh", "-c", command], input=stdin or b"", capture_output=True, env=self.env,
                              timeout=timeout)
        return proc.returncode, proc.stdout, proc.stderr

    def check(self, command: str, **kwargs: Any) -> str:
        status, out, err = self.run(command, **kwargs)
        if status != 0:
            raise RuntimeFailure(f"{command[:60]!r}: exit {status}: {(err or out).decode()[-300:]}")
        return out.decode()


class FakeRuntime:
    def __init__(self, root: Path, stubs: Path) -> None:
        self.prefix = new_prefix()
        self.run_root = str(root / "runs" / self.prefix)
        self.connection = LocalConn(stubs)

    def conn(self, host: Host) -> LocalConn:
        return self.connection

    def down(self, host: Host) -> bool:
        return False


class Links(SshLinks):
    def delay_argv(self, host: Host, queues: list[str]) -> list[str]:
        return [sys.executable, "-c", FAKE_DELAYQ, *queues]


class Failing(SshLinks):
    def delay_argv(self, host: Host, queues: list[str]) -> list[str]:
        return [sys.executable, "-c", FAKE_DELAYQ, *queues, "fail"]


HOST = Host(name="az1-node", role="node", az="az1", index=1, address="10.0.1.11")


@pytest.fixture
def links(tmp_path: Path) -> Iterator[SshLinks]:
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, text in (("tc", TC), ("ip", IP)):
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    runtime = FakeRuntime(tmp_path / "root", stubs)
    shaper = Links(runtime)  # type: ignore[arg-type]
    yield shaper
    for process in shaper._process.values():
        runtime.connection.check(f"kill -9 {process.pid} 2>/dev/null; true")


def local(links: SshLinks) -> LocalConn:
    return cast(FakeRuntime, links.runtime).connection


def qdisc(links: SshLinks, device: str) -> str:
    stubs = Path(local(links).env["STUBS"])
    path = stubs / f"qdisc.{device}"
    return path.read_text().strip() if path.exists() else ""


def tc_log(links: SshLinks) -> str:
    return (Path(local(links).env["STUBS"]) / "tc.log").read_text()


def test_the_batch_carries_the_projects_handle() -> None:
    batch = owned_batch((("10.0.2.11", 1000), ("10.0.3.11", 500)), "ens3")
    assert f"qdisc add dev ens3 root handle {HANDLE}: htb" in batch
    assert f"class add dev ens3 parent {HANDLE}: classid {HANDLE}:10 htb rate 500kbit" in batch
    assert f"match ip dst 10.0.2.11/32 flowid {HANDLE}:11" in batch and " 1:" not in batch


def test_rates_go_on_the_device_each_destination_is_reached_through_and_leave_with_their_record(links: SshLinks) -> None:
    links.shape(HOST, LinkShaping(rates=(("10.0.2.11", 1000), ("10.9.0.7", 1000))))
    assert qdisc(links, "eth0") == qdisc(links, "eth1") == f"qdisc htb {HANDLE}: root"
    records = Path(links.records)
    assert sorted(p.name for p in records.iterdir()) == ["eth0", "eth1"]  # written before tc touched them
    assert "10.0.2.11/32" in tc_log(links) and "10.9.0.7/32" in tc_log(links)
    assert all(sudo for command, sudo in local(links).commands if "tc " in command)
    links.shape(HOST, LinkShaping(rates=(("10.0.2.11", 1000), ("10.9.0.7", 1000))))  # unchanged: nothing rewritten
    assert tc_log(links).count("-batch") == 1
    links.clear(HOST)
    assert qdisc(links, "eth0") == qdisc(links, "eth1") == "" and list(records.iterdir()) == []
    links.clear(HOST)  # idempotent


def test_a_device_with_a_root_qdisc_of_its_own_is_refused_and_left_alone(links: SshLinks) -> None:
    stubs = Path(local(links).env["STUBS"])
    (stubs / "qdisc.eth0").write_text("qdisc fq 8001: root refcnt 2\n")
    with pytest.raises(RuntimeFailure, match=r"^az1-node: throttling links with tc: dev eth0 has a root qdisc of its "
                                             r"own, not replaced: qdisc fq 8001: root"):
        links.shape(HOST, LinkShaping(rates=(("10.0.2.11", 1000),)))
    assert qdisc(links, "eth0") == "qdisc fq 8001: root refcnt 2" and "del" not in tc_log(links)


def test_clean_removes_every_runs_recorded_htb_and_only_ours(links: SshLinks, tmp_path: Path) -> None:
    stubs = Path(local(links).env["STUBS"])
    runs = tmp_path / "root" / "runs"
    for prefix, device, root in (("fl000001", "eth0", f"qdisc htb {HANDLE}: root"),
                                 ("fl000002", "eth1", f"qdisc htb {HANDLE}: root"),
                                 ("fl000003", "eth2", "qdisc fq 8001: root")):  # replaced by someone since
        (runs / prefix / "tc").mkdir(parents=True)
        (runs / prefix / "tc" / device).touch()
        (stubs / f"qdisc.{device}").write_text(root + "\n")
    out = local(links).check(unshape_command(f"{runs}/fl{'[0-9a-f]' * 6}/tc"))
    assert out.split() == ["eth0", "eth1"]
    assert qdisc(links, "eth2") == "qdisc fq 8001: root" and not list(runs.glob("*/tc/*"))


def test_a_delay_process_runs_as_the_runs_until_its_delays_change_or_go(links: SshLinks) -> None:
    links.shape(HOST, LinkShaping(delays=((1, 200.0, 0.0),)))
    first = links._process[HOST.name]
    assert first.alive()
    environ = Path(f"/proc/{first.pid}/environ").read_bytes().split(b"\0")
    assert f"{RUN_ENV}={links.runtime.prefix}".encode() in environ  # teardown and clean find it
    links.shape(HOST, LinkShaping(delays=((1, 200.0, 0.0), (2, 50.0, 10.0))))
    second = links._process[HOST.name]
    assert not first.alive() and first.exit_status() == 0 and second.alive()  # SIGTERM: released and gone
    assert "2:50:10" in Path(f"/proc/{second.pid}/cmdline").read_text()
    links.clear(HOST)
    assert not second.alive() and HOST.name not in links._process


def test_a_delay_process_that_cannot_bind_its_queues_is_one_error_naming_the_host(links: SshLinks) -> None:
    with pytest.raises(RuntimeFailure, match=r"^delaying links of az1-node: the delay process did not bind its "
                                             r"queues: delayq: binding NFQUEUE 1: Operation not permitted"):
        Failing(links.runtime).shape(HOST, LinkShaping(delays=((1, 200.0, 0.0),)))
    assert HOST.name not in links._process


def test_the_real_delay_argv_runs_delayq_as_the_run_through_sudo_where_asked(links: SshLinks) -> None:
    argv = SshLinks.delay_argv(links, HOST, ["1:200:0"])
    assert argv[:2] == ["env", f"{RUN_ENV}={links.runtime.prefix}"]
    assert "testbed.runtime.delayq" in argv[-2] and argv[-1] == "1:200:0"
    local(links).host.sudo = True
    assert SshLinks.delay_argv(links, HOST, ["1:200:0"])[:3] == ["sudo", "-n", "env"]


def test_preflight_names_a_host_without_net_admin_or_htb(monkeypatch: pytest.MonkeyPatch, links: SshLinks) -> None:
    conn = cast(Any, local(links))
    monkeypatch.setattr(ssh_preflight, "CAPS", "echo 00000000a80425fb")  # docker's default set: no NET_ADMIN
    assert ssh_preflight._kernel_problem(conn, "hosts[0] root@h:22 (az1-node)") == (
        "hosts[0] root@h:22 (az1-node): no CAP_NET_ADMIN for its root (fault rules, tc and the delay process need "
        "it; a container needs --cap-add NET_ADMIN)")
    monkeypatch.setattr(ssh_preflight, "CAPS", "echo 00000000a80435fb")  # and with it
    monkeypatch.setattr(ssh_preflight, "KERNEL", "exit 0")
    assert ssh_preflight._kernel_problem(conn, "h") is None
    monkeypatch.setattr(ssh_preflight, "KERNEL", "echo sch_htb")
    assert ssh_preflight._kernel_problem(conn, "h") == "h: the kernel has no HTB (throttle-link) (sch_htb)"


"""The netns runtime's firewall: one host's fault chains rewritten atomically and confirmed by the kernel.

`FirewallChannel` keeps a long-lived `iptables-restore --noflush` inside the
host's namespace and hears each committed nftables transaction on a netfilter
netlink socket opened in that namespace. Must never: touch the machine's own
filter table (everything here runs inside a run's namespace).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable

from testbed.errors import RuntimeFailure
from testbed.runtime.base import FAULT_IN_CHAIN, FAULT_OUT_CHAIN, fault_table

# Hearing nftables commits (linux/netfilter/nfnetlink.h, nf_tables.h).
NETLINK_NETFILTER = 12
NFNLGRP_NFTABLES = 7
NFT_MSG_NEWGEN = (10 << 8) | 15  # NFNL_SUBSYS_NFTABLES << 8 | NFT_MSG_NEWGEN
NFTA_GEN_PROC_PID = 2
CLONE_NEWNET = 0x40000000
FIREWALL_ACK_S = 5.0
_libc = ctypes.CDLL(None, use_errno=True)
log = logging.getLogger("faultline.runtime")


def nftables_monitor(namespace: str) -> socket.socket:
    """A netfilter netlink socket in the network namespace at path `namespace` that hears every nftables change."""
    made: list[socket.socket | BaseException] = []

    def make() -> None:
        # setns(2) moves only the calling thread, so a throwaway thread does it and ours stays put;
        # the socket belongs to the namespace it was created in.
        try:
            fd = os.open(namespace, os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns into {namespace}: {os.strerror(err)}")
            finally:
                os.close(fd)
            sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            sock.bind((0, 1 << (NFNLGRP_NFTABLES - 1)))
            made.append(sock)
        except BaseException as exc:
            made.append(exc)

    worker = threading.Thread(target=make, name=f"netns-{namespace}")
    worker.start()
    worker.join()
    if isinstance(made[0], BaseException):
        raise RuntimeFailure(f"cannot watch the firewall of {namespace}: {made[0]}") from made[0]
    return made[0]


def committed_by(datagram: bytes) -> list[int]:
    """The pids named by the NEWGEN messages (one per committed nftables transaction) in a netlink datagram."""
    pids, off = [], 0
    while off + 20 <= len(datagram):
        length, kind = struct.unpack_from("=IH", datagram, off)
        if length < 16:
            break
        if kind == NFT_MSG_NEWGEN:
            attr = off + 20  # after nlmsghdr (16) and nfgenmsg (4)
            while attr + 4 <= off + length:
                alen, atype = struct.unpack_from("=HH", datagram, attr)
                if alen < 4:
                    break
                if atype == NFTA_GEN_PROC_PID:
                    pids.append(struct.unpack_from(">I", datagram, attr + 4)[0])
                attr += (alen + 3) & ~3
        off += (length + 3) & ~3
    return pids


class FirewallChannel:
    """One host's fault chains, rewritten by a long-lived `iptables-restore --noflush` in its namespace.

    Each `install` writes one COMMIT block to the process's stdin: one atomic
    nftables transaction that replaces both fault chains. The kernel announces
    every committed transaction in the namespace with a NEWGEN message naming
    the committing process; ours is the acknowledgement, anyone else's means
    the rules are no longer what this channel last installed. Spawning a
    process per change costs tens of milliseconds (its netlink socket's close
    waits for an RCU grace period); this costs a pipe write and a netlink read.
    The process carries the run's prefix, so teardown and `clean` find it.
    """

    def __init__(self, namespace: str, env: dict[str, str], monitor: socket.socket, installed: str) -> None:
        self.monitor = monitor
        self.process = subprocess.Popen(
            ["nsenter", f"--net={namespace}", "iptables-restore", "--noflush"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env=env, start_new_session=True)
        self.installed: str | None = installed
        self._drain()  # the one-shot restore that made the table was not ours: forget its announcement

    def _drain(self) -> list[int]:
        """Every committing pid announced since the last read, without waiting."""
        pids: list[int] = []
        self.monitor.setblocking(False)
        try:
            while True:
                pids += committed_by(self.monitor.recv(1 << 16))
        except BlockingIOError:
            return pids
        except OSError as exc:  # ENOBUFS: announcements were lost, so were possibly foreign ones
            raise RuntimeFailure(f"lost track of the firewall ({exc})") from exc

    def install(self, rules: str) -> None:
        """Make the fault chains hold `rules`; RuntimeFailure if it cannot be sure they do."""
        if any(pid != self.process.pid for pid in self._drain()):
            raise RuntimeFailure("another process changed the rules")
        if rules == self.installed:
            return  # an identical transaction would be empty, and the kernel announces no empty one
        if self.process.poll() is not None:
            raise RuntimeFailure(f"iptables-restore exited {self.process.returncode}: {self._stderr()}")
        self.installed = None
        block = f"*filter\n:{FAULT_IN_CHAIN} - [0:0]\n:{FAULT_OUT_CHAIN} - [0:0]\n{rules}COMMIT\n"
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(block)
            self.process.stdin.flush()
        except OSError as exc:
            raise RuntimeFailure(f"iptables-restore went away: {exc}") from exc
        self._await_commit()
        self.installed = rules

    def _await_commit(self) -> None:
        deadline = time.monotonic() + FIREWALL_ACK_S
        self.monitor.setblocking(True)
        while (left := deadline - time.monotonic()) > 0:
            self.monitor.settimeout(min(left, 0.05))
            try:
                pids = committed_by(self.monitor.recv(1 << 16))
            except TimeoutError:
                if self.process.poll() is not None:
                    raise RuntimeFailure(f"iptables-restore exited {self.process.returncode}: "
                                         f"{self._stderr()}") from None
                continue
            except OSError as exc:
                raise RuntimeFailure(f"lost track of the firewall ({exc})") from exc
            if any(pid != self.process.pid for pid in pids):
                raise RuntimeFailure("another process changed the rules meanwhile")
            if pids:
                return
        raise RuntimeFailure(f"rules not confirmed within {FIREWALL_ACK_S:.0f} s")

    def _stderr(self) -> str:
        if self.process.poll() is None or self.process.stderr is None:
            return ""
        return self.process.stderr.read().strip()[-300:]

    def end_input(self) -> None:
        """Tell the process there is nothing more to commit; it exits soon after."""
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()

    def close(self) -> None:
        """End the process and stop listening."""
        self.end_input()
        try:
            self.process.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        self.monitor.close()


class FirewallChannels:
    """Every host's `FirewallChannel`, with the one-shot fallback: the fast path of the runtimes whose hosts
    are network namespaces of this machine's kernel (netns; docker with a daemon on this machine)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self._channels: dict[str, FirewallChannel] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def install(self, key: str, namespace: str, rules: str, one_shot: Callable[[str], None]) -> None:
        """Make the fault chains of the namespace at path `namespace` hold exactly `rules`, atomically.

        Fast path: the host's channel commits the change as one transaction and
        we return once the kernel announces it, a few milliseconds. Whenever that
        path cannot vouch for the result (first use, the process died, another
        process changed the host's rules, no acknowledgement), `one_shot(table)`
        replaces the whole filter table instead, and a new channel is opened.
        """
        with self._lock(key):
            channel = self._channels.pop(key, None)
            if channel is not None:
                try:
                    channel.install(rules)
                    self._channels[key] = channel
                    return
                except RuntimeFailure as exc:
                    log.warning("firewall of %s: %s; replacing the whole table", key, exc)
                    channel.close()
            monitor = nftables_monitor(namespace)
            try:
                one_shot(fault_table(rules))
                self._channels[key] = FirewallChannel(namespace, self.env, monitor, rules)
            except BaseException:
                monitor.close()
                raise

    def drop(self, key: str) -> None:
        """Forget a host's channel (its namespace was cleared or is gone)."""
        with self._lock(key):
            channel = self._channels.pop(key, None)
        if channel is not None:
            channel.close()

    def close(self) -> None:
        """End every channel; a netlink socket would keep a deleted namespace alive."""
        with self._guard:
            channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            channel.end_input()  # all at once: each process takes a while to exit
        for channel in channels:
            channel.close()

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

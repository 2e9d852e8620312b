"""One pooled SSH connection per host (paramiko): commands, SFTP, keepalive, reconnect with backoff.

A dropped connection (the host's sshd session killed, a network blip) is
re-established on the next use, backing off up to RECONNECT_S; a command whose
channel could not be opened is retried on the new connection, a command that
was already running is retried only when the caller says it may run twice.
Host keys are checked against a known_hosts file: the user's (`--known-hosts`,
an unknown or changed key is refused), or trust-on-first-use, where the first
key seen is written to the run's own known_hosts file and every reconnect must
present the same one.
Must never: accept a host key that differs from the one on file, or run a
command on a host the inventory does not name.
"""

from __future__ import annotations

import logging
import shlex
import socket
import subprocess
import threading
import time
from pathlib import Path

import paramiko

from testbed.errors import RuntimeFailure, UsageError
from testbed.inventory import SshHost

KEEPALIVE_S = 2
CONNECT_TIMEOUT_S = 10.0
RECONNECT_S = 30.0  # give up reconnecting after this long
log = logging.getLogger("faultline.runtime")
# paramiko logs every connection and tracebacks of failed ones; this module words failures itself, in one line.
logging.getLogger("paramiko").setLevel(logging.CRITICAL)


class HostKeys:
    """Where host keys come from: a known_hosts file the user vouches for, or trust-on-first-use into `tofu_file`."""

    def __init__(self, known_hosts: str | None, tofu_file: Path | None) -> None:
        self.known_hosts = known_hosts
        self.tofu_file = tofu_file
        self._lock = threading.Lock()

    def describe(self) -> str:
        if self.known_hosts:
            return f"checked against {self.known_hosts} (--known-hosts)"
        return f"trust on first use: the keys first seen are in {self.tofu_file or 'memory'}, later connections must match"

    def configure(self, client: paramiko.SSHClient) -> None:
        if self.known_hosts:
            try:
                client.load_host_keys(self.known_hosts)
            except OSError as exc:
                raise UsageError(f"--known-hosts {self.known_hosts}: cannot read it ({exc.strerror or exc})") from exc
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
            return
        if self.tofu_file is not None and self.tofu_file.exists():
            client.load_host_keys(str(self.tofu_file))
        client.set_missing_host_key_policy(_TrustFirstUse(self))

    def remember(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        with self._lock:
            client.get_host_keys().add(hostname, key.get_name(), key)
            if self.tofu_file is not None:
                self.tofu_file.parent.mkdir(parents=True, exist_ok=True)
                with open(self.tofu_file, "a") as out:
                    out.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")


class _TrustFirstUse(paramiko.MissingHostKeyPolicy):
    def __init__(self, keys: HostKeys) -> None:
        self.keys = keys

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        self.keys.remember(client, hostname, key)


def connect_error(host: SshHost, exc: BaseException, keys: HostKeys) -> str:
    """What went wrong connecting to `host`, in words a user can act on."""
    where = f"{host.entry} {host.target}"
    if isinstance(exc, paramiko.BadHostKeyException):
        return f"{where}: its host key does not match the one on file ({keys.describe()})"
    if isinstance(exc, paramiko.AuthenticationException):
        how = f"key {host.key_file}" if host.key_file else "the agent's keys"
        return f"{where}: the host refused {how} for user {host.user}"
    if isinstance(exc, paramiko.SSHException) and "known_hosts" in str(exc):
        return f"{where}: its host key is not in {keys.known_hosts} (--known-hosts)"
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError | ConnectionError | socket.timeout
                  | TimeoutError | OSError):
        return f"{where}: unreachable ({' '.join(str(exc).split())[:200]})"
    return f"{where}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"


class SshConnection:
    """The harness's one connection to one host; thread-safe; reconnects when it drops."""

    def __init__(self, host: SshHost, keys: HostKeys) -> None:
        self.host = host
        self.keys = keys
        self._client: paramiko.SSHClient | None = None
        self._lock = threading.Lock()
        self._ever = False  # connected before: a new connection is a reconnect, worth retrying with backoff
        self.reconnects = 0

    def _transport(self) -> paramiko.Transport:
        with self._lock:
            transport = self._client.get_transport() if self._client is not None else None
            if transport is not None and transport.is_active():
                return transport
            return self._reconnect()

    def _reconnect(self) -> paramiko.Transport:
        first = not self._ever
        if self._client is not None:
            self._client.close()
            self._client = None
        deadline = time.monotonic() + (0 if first else RECONNECT_S)
        delay = 0.1
        while True:
            try:
                self._client = self.open()
                self._ever = True
                break
            except (paramiko.BadHostKeyException, paramiko.AuthenticationException, UsageError):
                raise
            except (paramiko.SSHException, OSError) as exc:
                if time.monotonic() + delay > deadline:
                    raise RuntimeFailure(connect_error(self.host, exc, self.keys)) from exc
                time.sleep(delay)
                delay = min(delay * 2, 4.0)
        if not first:
            self.reconnects += 1
            log.warning("ssh: the connection to %s (%s) dropped; reconnected", self.host.name, self.host.target)
        transport = self._client.get_transport()
        assert transport is not None
        return transport

    def open(self) -> paramiko.SSHClient:
        """A fresh, authenticated client (paramiko's exceptions pass through: preflight words them)."""
        client = paramiko.SSHClient()
        self.keys.configure(client)
        # The key loaded here, whatever its type: with key_filename paramiko would report a refused key as the
        # last key type it failed to parse the file as.
        pkey = paramiko.PKey.from_path(self.host.key_file) if self.host.key_file else None
        try:
            client.connect(self.host.ssh_address, port=self.host.port, username=self.host.user,
                           pkey=pkey, allow_agent=pkey is None,
                           look_for_keys=False, timeout=CONNECT_TIMEOUT_S, banner_timeout=CONNECT_TIMEOUT_S,
                           auth_timeout=CONNECT_TIMEOUT_S)
        except BaseException:
            client.close()
            raise
        transport = client.get_transport()
        assert transport is not None
        transport.set_keepalive(KEEPALIVE_S)
        return client

    def connect(self) -> None:
        """Connect now, once, without retrying (paramiko's exceptions pass through: preflight words them)."""
        with self._lock:
            self._client = self.open()
            self._ever = True

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # -- commands ----------------------------------------------------------
    def run(self, command: str, *, timeout: float = 30.0, stdin: bytes | None = None,
            retry: bool = True, sudo: bool = False) -> tuple[int, bytes, bytes]:
        """Run a shell command line; (status, stdout, stderr). RuntimeFailure on a timeout or a lost host."""
        if sudo and self.host.sudo:
            command = f"sudo -n -- sh -c {shlex.quote(command)}"
        for attempt in (1, 2):
            transport = self._transport()
            try:
                channel = transport.open_session(timeout=CONNECT_TIMEOUT_S)
            except (paramiko.SSHException, OSError, EOFError) as exc:
                self._drop(transport)
                if attempt == 2:
                    raise RuntimeFailure(f"{self.host.name}: cannot open a channel ({exc})") from exc
                continue
            try:
                return self._exchange(channel, command, timeout, stdin)
            except (paramiko.SSHException, EOFError, ConnectionError) as exc:
                self._drop(transport)
                if attempt == 2 or not retry:
                    raise RuntimeFailure(f"{self.host.name}: the connection dropped during "
                                         f"{command[:80]!r} ({exc})") from exc
            finally:
                channel.close()
        raise AssertionError("unreachable")

    def _exchange(self, channel: paramiko.Channel, command: str, timeout: float,
                  stdin: bytes | None) -> tuple[int, bytes, bytes]:
        channel.settimeout(timeout)
        channel.exec_command(command)
        if stdin:
            channel.sendall(stdin)
        channel.shutdown_write()
        out, err = bytearray(), bytearray()
        try:
            while chunk := channel.recv(1 << 16):
                out += chunk
            while chunk := channel.recv_stderr(1 << 16):
                err += chunk
        except TimeoutError as exc:
            raise RuntimeFailure(f"{self.host.name}: {command[:120]!r}: no answer within {timeout:.0f} s") from exc
        if not channel.status_event.wait(timeout):
            raise RuntimeFailure(f"{self.host.name}: {command[:120]!r}: no exit status within {timeout:.0f} s")
        status = channel.recv_exit_status()
        if status == -1:
            raise EOFError("the channel closed without an exit status")
        return status, bytes(out), bytes(err)

    def _drop(self, transport: paramiko.Transport) -> None:
        with self._lock:
            if self._client is not None and self._client.get_transport() is transport:
                self._client.close()
                self._client = None

    def check(self, command: str, *, timeout: float = 30.0, stdin: bytes | None = None,
              retry: bool = True, sudo: bool = False) -> str:
        """Run a command that must succeed; its stdout as text."""
        status, out, err = self.run(command, timeout=timeout, stdin=stdin, retry=retry, sudo=sudo)
        if status != 0:
            said = (err or out).decode(errors="replace").strip()[-300:]
            raise RuntimeFailure(f"{self.host.name}: {command[:160]!r}: exit {status}: {said}")
        return out.decode(errors="replace")

    def completed(self, argv: list[str], status: int, out: bytes, err: bytes) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, status, out.decode(errors="replace"), err.decode(errors="replace"))

    # -- files -------------------------------------------------------------
    def sftp_put(self, local: Path, remote: str) -> None:
        """Copy one file to the host over SFTP (the remote directory must exist)."""
        for attempt in (1, 2):
            transport = self._transport()
            try:
                with paramiko.SFTPClient.from_transport(transport) as sftp:
                    sftp.put(str(local), remote)
                return
            except (paramiko.SSHException, EOFError, ConnectionError) as exc:
                self._drop(transport)
                if attempt == 2:
                    raise RuntimeFailure(f"{self.host.name}: SFTP of {local.name} failed ({exc})") from exc
            except OSError as exc:
                raise RuntimeFailure(f"{self.host.name}: SFTP of {local.name} to {remote}: {exc}") from exc

    def sftp_get(self, remote: str, local: Path) -> bool:
        """Copy one file from the host over SFTP; False if it is not there."""
        transport = self._transport()
        try:
            with paramiko.SFTPClient.from_transport(transport) as sftp:
                local.parent.mkdir(parents=True, exist_ok=True)
                sftp.get(remote, str(local))
            return True
        except FileNotFoundError:
            return False
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise RuntimeFailure(f"{self.host.name}: SFTP of {remote} failed ({exc})") from exc

"""An sshd test bed: containers standing in for real hosts, reached only through the inventory it writes.

Each host is a container of faultline/base (Debian with openssh-server, a JRE,
python3-venv, iptables; no Kafka, no project code) on an internal network of
the project's own dockerd, with NET_ADMIN for its firewall; with `fuse`, its
node hosts also get /dev/fuse, SYS_ADMIN and no AppArmor confinement, so
unsyncfs can mount there (what a FUSE-capable machine offers). Its host keys are
generated when it starts (`ssh-keygen -A`), so every test bed has new ones;
one client key (made here with paramiko) is authorized on all of them. The
harness reaches them through the network's bridge address, the control
address of the inventory, as it would reach VMs. Used by tests/ssh and by
`make bench-cluster RUNTIME=ssh`; the code under test sees only the inventory
and the known_hosts file written here.
Must never: create a network outside 198.19.0.0/24 or one that is not internal.
"""

from __future__ import annotations

import contextlib
import io
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import paramiko
import yaml

from testbed.paths import REPO_ROOT
from testbed.runtime.base import new_prefix
from testbed.runtime.docker_api import create_internal_network, remove_prefixed_resources

BASE_IMAGE = "faultline/base:bookworm"
SUBNET = "198.19.0.128/26"  # gateway .129 (the control address), hosts from .140
CONTROL = "198.19.0.129"
SSHD = ("mkdir -p /run/sshd && ssh-keygen -A -q && "
        "exec /usr/sbin/sshd -D -e -o PermitRootLogin=prohibit-password -o UseDNS=no -o MaxStartups=100")


@dataclass
class SshTestBed:
    client: docker.DockerClient
    prefix: str
    folder: Path
    key_file: Path
    containers: dict[str, Any] = field(default_factory=dict)  # address -> container
    roles: dict[str, tuple[str, str]] = field(default_factory=dict)  # address -> (az, role)

    @property
    def inventory(self) -> Path:
        return self.folder / "inventory.yaml"

    @property
    def known_hosts(self) -> Path:
        return self.folder / "known_hosts"

    def add_host(self, address: str, az: str, role: str, fuse: bool = False) -> Any:
        """Start one sshd container at `address` and wait until its sshd answers (`fuse`: able to mount FUSE)."""
        name = self.container_name(address)
        api = self.client.api
        rights: dict[str, Any] = {"cap_add": ["NET_ADMIN"]}
        if fuse:
            rights = {"cap_add": ["NET_ADMIN", "SYS_ADMIN"], "devices": ["/dev/fuse:/dev/fuse:rwm"],
                      "security_opt": ["apparmor=unconfined"]}
        created = api.create_container(
            BASE_IMAGE, command=["sh", "-c", SSHD], name=name, hostname=f"{az}-{role}",
            labels={"faultline.testbed": self.prefix}, host_config=api.create_host_config(**rights),
            networking_config=api.create_networking_config(
                {f"{self.prefix}-net": api.create_endpoint_config(ipv4_address=address)}))
        container = self.client.containers.get(created["Id"])
        public = paramiko.RSAKey.from_private_key_file(str(self.key_file))
        container.put_archive("/", _tar({"root/.ssh/authorized_keys": f"ssh-rsa {public.get_base64()}\n"}))
        container.start()
        self.containers[address] = container
        self.roles[address] = (az, role)
        _wait_port(address, 22)
        return container

    def container_name(self, address: str) -> str:
        return f"{self.prefix}-{address.rsplit('.', 1)[1]}"

    def power_commands(self, address: str) -> dict[str, str]:
        """Inventory `power_off`/`power_on` for the host: `docker kill`/`docker start` of its container (this
        bed's prefix only), on the daemon of the harness's DOCKER_HOST, waiting until the container has stopped."""
        name = self.container_name(address)
        return {"power_off": f"docker kill {name} >/dev/null && docker wait {name} >/dev/null",
                "power_on": f"docker start {name} >/dev/null"}

    def host_keys(self, address: str) -> str:
        """known_hosts lines for the host's keys, as its sshd made them."""
        lines = []
        for kind in ("ed25519", "ecdsa", "rsa"):
            out = self.exec(address, f"cat /etc/ssh/ssh_host_{kind}_key.pub").split()
            lines.append(f"{address} {out[0]} {out[1]}\n")
        return "".join(lines)

    def exec(self, address: str, command: str, check: bool = True) -> str:
        code, out = self.containers[address].exec_run(["sh", "-c", command])
        text = out.decode(errors="replace")
        if check and code != 0:
            raise AssertionError(f"{command!r} on {address}: exit {code}: {text[-500:]}")
        return text

    def write_inventory(self, path: Path, hosts: list[dict[str, Any]] | None = None, **top: Any) -> Path:
        entries = hosts if hosts is not None else [
            {"address": a, "az": az, "role": role} for a, (az, role) in self.roles.items()]
        data = {"control": CONTROL, "user": "root", "key_file": str(self.key_file), **top, "hosts": entries}
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path


def _tar(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for directory in sorted({str(Path(name).parent) for name in files}):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o700
            tar.addfile(info)
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o600
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _wait_port(address: str, port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((address, port), timeout=1.0) as sock:
                if sock.recv(4).startswith(b"SSH"):
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"no sshd answers at {address}:{port}")
        time.sleep(0.1)


def build_base_image() -> None:
    """faultline/base in the daemon of DOCKER_HOST (built by compose/build_images.py unless it is there)."""
    built = subprocess.run([sys.executable, "compose/build_images.py", "--only", "base"],
                           cwd=REPO_ROOT, capture_output=True, text=True, timeout=1200)
    if built.returncode != 0:
        raise RuntimeError(built.stdout[-2000:] + built.stderr[-2000:])


@contextlib.contextmanager
def sshd_testbed(client: docker.DockerClient, folder: Path, azs: int = 3, fuse: bool = False) -> Iterator[SshTestBed]:
    """`azs` AZs, each a node host and a client host, fresh: nothing but sshd, java and python3 on them (`fuse`: the
    node hosts can mount FUSE)."""
    key_file = folder / "id_rsa"
    paramiko.RSAKey.generate(2048).write_private_key_file(str(key_file))
    prefix = new_prefix()
    create_internal_network(client, f"{prefix}-net", SUBNET)
    bed = SshTestBed(client, prefix, folder, key_file)
    try:
        for i in range(1, azs + 1):
            bed.add_host(f"198.19.0.{140 + i}", f"az{i}", "node", fuse=fuse)
            bed.add_host(f"198.19.0.{150 + i}", f"az{i}", "client")
        bed.write_inventory(bed.inventory)
        bed.known_hosts.write_text("".join(bed.host_keys(a) for a in bed.containers))
        yield bed
    finally:
        remove_prefixed_resources(client, prefix)

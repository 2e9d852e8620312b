"""The docker runtime: every host a container on one internal network of the daemon the user has.

Node hosts run `faultline/kafka:<version>` (a rolling upgrade's second version is put in them: docker_versions),
client hosts `faultline/client` (compose/, `make docker-images`), each with NET_ADMIN only, named `<prefix>-<host>`
and labelled `faultline.run=<prefix>`, on the network `<prefix>-net` (internal: no route off the machine; the
daemon's bridge holds the control address, so the harness reaches every host and no rule inside a container can cut
it off). The daemon is DOCKER_HOST or the default socket (`testbed.runtime.dockerd.docker_client`).

Files go in and out through the API (tar archives), so the daemon may be anywhere: a host keeps the run folder's
`path` at `/faultline/run/<path relative to the run folder>`. Processes are `docker exec`s: a small shell writes
its pid, then execs the command, so the handle knows the process's pid inside the container and the daemon's exec
record says whether it runs and how it ended. Fault rules are one `iptables-restore` of the filter table inside the
container (Docker keeps its DNS rules in the nat table, untouched). A power-off kills the node's container (every
process dies at once); power-on starts it again with its filesystem as it was. When the daemon runs on this machine
(the project's own dockerd, or a local socket), a node's data directories are bind mounts of the run folder's, and
`keep_unsynced` mounts the lose-unsynced-writes filesystem over them here (`testbed.runtime.unsynced`, as netns
does) and restarts the container so its binds show it: a power-off then cuts that filesystem with the container,
dropping what was not fsynced, and power-on mounts what survived before the container starts again. Degraded links
(same condition) are the netns runtime's (`testbed.runtime.netns_links`) run from here inside the container's
network namespace (`nsenter --net`): an HTB qdisc on its eth0 and a delay process holding its NFQUEUE queues.

Must never: touch a container or network without this run's prefix, or create
a network that is not internal.
"""

from __future__ import annotations

import io
import ipaddress
import os
import subprocess
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

import docker
import docker.errors

from testbed.addressing import AddressPlan, Host
from testbed.errors import RuntimeFailure, UsageError
from testbed.paths import REPO_ROOT
from testbed.runfolder import ROLE_DATA, RunFolder
from testbed.runtime.base import EMPTY_FILTER_TABLE, PREFIX_RE, RUN_ENV, LinkShaping, Software, fault_table
from testbed.runtime.docker_api import (
    DEFAULT_HOST,
    NETWORK_RANGE,
    create_internal_network,
    docker_client,
    remove_prefixed_resources,
    with_timeout,
)
from testbed.runtime.docker_procs import DockerProcess
from testbed.runtime.docker_venvs import DockerClientVenvs
from testbed.runtime.docker_versions import IMAGE_CLASSPATH, NodeVersions
from testbed.runtime.netns_firewall import FirewallChannels
from testbed.runtime.netns_links import NetnsLinks
from testbed.runtime.unsynced import LocalDiskFaults, UnsyncedDisks
from testbed.state import RunState

KAFKA_IMAGE = "faultline/kafka:{version}"
CLIENT_IMAGE = "faultline/client:latest"
LABEL = "faultline.run"
HOST_ROOT = "/faultline"  # a host's copy of the run folder is HOST_ROOT/run, this project's code HOST_ROOT/src
PYTHON = {"node": "python3", "client": "/opt/faultline/venv/bin/python"}
CODE_PACKAGES = ("testbed", "workloads", "nemesis", "harness", "checkers")
NODE_JAVA, NODE_CLASSPATH = "java", IMAGE_CLASSPATH  # what a node image offers (compose/kafka/Dockerfile)
SPAWN = ('mkdir -p "$(dirname "$1")" "$(dirname "$2")" && echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && '
         'log="$2" && shift 2 && exec "$@" >> "$log" 2>&1')
PID_WAIT_S = 5.0


class DockerRuntime(LocalDiskFaults, DockerClientVenvs):
    """Hosts as containers; implements Runtime, Firewalled, KeepsNetwork, PowerCycled, CarriesClientVenvs, and with
    a daemon on this machine LosesUnsyncedWrites, DiskFaults and LinkShaper; its processes are Pausable."""

    kind = "docker"
    code_root = f"{HOST_ROOT}/src"  # this project's code on a host (`install`)

    def __init__(self, prefix: str, plan: AddressPlan, state: RunState,
                 client: docker.DockerClient | None = None) -> None:
        if not PREFIX_RE.match(prefix):
            raise RuntimeFailure(f"bad run prefix {prefix!r}")
        self.prefix = prefix
        self.plan = plan
        self.state = state
        # The daemon that made the run (recorded by `create`) is the one recover, status and down talk to.
        self.client = client or docker_client(state.data.get("docker_host"))
        self._processes: dict[str, DockerProcess] = {}
        self._installed: set[str] = set()
        self._lock = threading.Lock()
        self._keep_network = False
        self._firewalls = FirewallChannels({**os.environ, RUN_ENV: prefix})
        self.disks = UnsyncedDisks(prefix, state, {**os.environ, RUN_ENV: prefix})
        self._links = NetnsLinks(self._enter, {**os.environ, RUN_ENV: prefix})
        self.versions = NodeVersions(HOST_ROOT, self._put_tar, lambda: self.state.data.get("settings", {}))

    # -- names -------------------------------------------------------------
    def container_name(self, host: Host) -> str:
        return f"{self.prefix}-{host.name}"

    @property
    def network(self) -> str:
        return f"{self.prefix}-net"

    def image(self, host: Host) -> str:
        return KAFKA_IMAGE.format(version=self.versions.image_version) if host.role == "node" else CLIENT_IMAGE

    def container(self, host: Host) -> Any:
        try:
            return self.client.containers.get(self.container_name(host))
        except docker.errors.NotFound as exc:
            raise RuntimeFailure(f"{host.name}: container {self.container_name(host)} is gone") from exc

    # -- lifecycle ---------------------------------------------------------
    @staticmethod
    def preflight(plan: AddressPlan, kafka_version: str) -> None:
        """A daemon answers and has the images: else one line naming the fix, before anything is created."""
        client = docker_client()
        wanted = ipaddress.IPv4Network(plan.network)
        for network in client.networks.list():
            for pool in (network.attrs.get("IPAM") or {}).get("Config") or []:
                subnet = pool.get("Subnet", "")
                if ":" not in subnet and subnet and wanted.overlaps(ipaddress.IPv4Network(subnet, strict=False)):
                    raise UsageError(f"--network {plan.network} overlaps the Docker network {network.name} "
                                     f"({subnet}); choose another range inside {NETWORK_RANGE} (or run "
                                     f"'python -m harness clean' if a dead run left it)")
        for image in (KAFKA_IMAGE.format(version=kafka_version), CLIENT_IMAGE):
            try:
                client.images.get(image)
            except docker.errors.ImageNotFound:
                raise UsageError(f"image {image} is not in the Docker daemon: build it with 'make docker-images'"
                                 f"{' KAFKA_VERSION=' + kafka_version if 'kafka' in image else ''}") from None

    def create(self) -> None:
        try:
            self._create()
        except docker.errors.APIError as exc:
            raise RuntimeFailure(f"creating the hosts on the Docker daemon: {exc.explanation or exc}") from exc

    def _create(self) -> None:
        self.state.update(docker_host=os.environ.get("DOCKER_HOST") or DEFAULT_HOST)
        self.state.add("networks", self.network)
        create_internal_network(self.client, self.network, self.plan.network)
        api = self.client.api
        for host in self.plan.hosts:
            name = self.container_name(host)
            self.state.add("containers", name)
            created = api.create_container(
                self.image(host), command=["sleep", "infinity"], name=name, hostname=host.name,
                labels={LABEL: self.prefix, "faultline.host": host.name},
                environment={RUN_ENV: self.prefix},
                host_config=api.create_host_config(cap_add=["NET_ADMIN"], init=True, binds=self._binds(host)),
                networking_config=api.create_networking_config(
                    {self.network: api.create_endpoint_config(ipv4_address=host.address)}))
            api.start(created["Id"])

    def local_daemon(self) -> bool:
        """Whether the daemon runs on this machine (a unix socket): its containers can bind this machine's dirs."""
        return str(self.client.api.base_url) == "http+docker://localhost"  # docker-py's name for a unix socket

    def data_dirs(self, host: Host) -> list[Path]:
        """The run-folder data directories a node's container binds from this machine (none: a remote daemon's)."""
        if host.role != "node" or not self.state.data.get("bound_data"):
            return []
        return [RunFolder(self.state.run_dir).node(host.name).data(role) for role in ROLE_DATA]

    def _binds(self, host: Host) -> dict[str, dict[str, str]]:
        if host.role == "node" and self.local_daemon():
            self.state.update(bound_data=True)
        binds = {}
        for d in self.data_dirs(host):
            d.mkdir(parents=True, exist_ok=True)
            binds[str(d)] = {"bind": self.host_path(host, d), "mode": "rw"}
        return binds

    def exists(self) -> bool:
        return bool(self.client.containers.list(all=True, filters={"label": f"{LABEL}={self.prefix}"}))

    def keep_network(self) -> None:
        self._keep_network = True

    def destroy(self) -> None:
        self._firewalls.close()
        self._links.close()
        remove_prefixed_resources(self.client, self.prefix, networks=not self._keep_network)
        self.disks.unmount_all()  # the nodes are gone: what they wrote is synced to the run folder
        for kind in ("containers", "networks")[:1 if self._keep_network else 2]:
            for name in list(self.state.data.get(kind, [])):
                self.state.discard(kind, name)
        self.state.update(processes={})

    def keep_unsynced(self, host: Host, dirs: list[Path], log_dir: Path) -> None:
        """Mount unsyncfs over the node's bound data directories here, then restart its container (nothing of the
        run runs in it yet) so that its binds show the mounts."""
        bound = self.data_dirs(host)
        if any(d not in bound for d in dirs):
            raise RuntimeFailure(f"{host.name}: the docker runtime loses unsynced writes only with a daemon on this "
                                 f"machine (its containers bind the run folder's data directories)")
        if all(m.alive() for m in self.disks.of(host.name)) and self.disks.of(host.name):
            return
        self.disks.keep(host.name, dirs, log_dir)
        self._kill(host)
        self.power_on(host)

    def power_off(self, host: Host) -> None:
        """Kill the container and, at the same instant, the filesystem under its data: unsynced writes are gone."""
        self._firewalls.drop(host.name)  # a restarted container has a new network namespace
        self._kill(host)
        self.disks.cut_host(host.name)
        self._links.clear(host)  # its delay process would keep the dead namespace alive

    def _kill(self, host: Host) -> None:
        try:
            container = self.container(host)
            container.kill()
        except docker.errors.APIError as exc:
            raise RuntimeFailure(f"powering off {host.name}: {exc.explanation or exc}") from exc
        deadline = time.monotonic() + 10
        while container.status == "running" and time.monotonic() < deadline:
            time.sleep(0.02)
            container.reload()

    def power_on(self, host: Host) -> None:
        """Mount what the node's disks kept, then start its container (a no-op while it runs)."""
        self.disks.mount_host(host.name)
        container = self.container(host)
        try:
            container.start()
        except docker.errors.APIError as exc:
            raise RuntimeFailure(f"powering on {host.name}: {exc.explanation or exc}") from exc
        deadline = time.monotonic() + 10
        while container.status != "running" and time.monotonic() < deadline:
            time.sleep(0.05)
            container.reload()

    # -- software and files ------------------------------------------------
    def install(self, host: Host, kafka_version: str) -> Software:
        """The cluster's Kafka jars come with the node image, a rolling upgrade's are put on the node at its first
        install (testbed.runtime.docker_versions); this project's code is put on the host, as it is now."""
        with self._lock:
            if host.name not in self._installed:
                self._put_tar(host, HOST_ROOT, code_archive())
                self.versions.install(host)
                self._installed.add(host.name)
        return Software(java=NODE_JAVA, kafka_classpath=self.versions.classpath(host, kafka_version),
                        python=("env", f"PYTHONPATH={self.code_root}", PYTHON[host.role]))

    def host_path(self, host: Host, path: Path) -> str:
        return container_path(self.state.run_dir, path)

    def put(self, host: Host, path: Path) -> str:
        target = self.host_path(host, path)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            tar.add(path, arcname=path.name)
        self.execute(host, ["mkdir", "-p", str(Path(target).parent)])
        self._put_tar(host, str(Path(target).parent), buffer.getvalue())
        return target

    def _put_tar(self, host: Host, where: str, data: bytes) -> None:
        self.execute(host, ["mkdir", "-p", where])
        try:
            copied = self.container(host).put_archive(where, data)
        except docker.errors.APIError as exc:
            raise RuntimeFailure(f"{host.name}: could not copy files into {where}: {exc.explanation or exc}") from exc
        if not copied:
            raise RuntimeFailure(f"{host.name}: could not copy files into {where}")

    def fetch(self, host: Host, path: Path) -> None:
        if any(path == d or d in path.parents for d in self.data_dirs(host)):
            return None  # bound from the run folder: already here
        try:
            stream, _ = self.container(host).get_archive(self.host_path(host, path))
        except docker.errors.NotFound:
            return None  # nothing there (yet): nothing to fetch
        except docker.errors.APIError as exc:
            raise RuntimeFailure(f"{host.name}: cannot fetch {path.name}: {exc.explanation or exc}") from exc
        path.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream)), mode="r") as tar:
            tar.extractall(path.parent, filter="data")

    # -- processes ---------------------------------------------------------
    def spawn(self, host: Host, name: str, argv: list[str], log: Path,
              env: dict[str, str] | None = None) -> DockerProcess:
        pidfile = f"{HOST_ROOT}/pids/{name.replace('/', '.')}.{time.time_ns()}.pid"  # never an old one's
        host_log = self.host_path(host, log)
        api = self.client.api
        try:
            exec_id = api.exec_create(self.container_name(host), ["sh", "-c", SPAWN, "spawn", pidfile, host_log,
                                                                  *argv],
                                      environment={RUN_ENV: self.prefix, **(env or {})})["Id"]
            api.exec_start(exec_id, detach=True)
        except docker.errors.APIError as exc:
            raise RuntimeFailure(f"starting {name} on {host.name}: {exc.explanation or exc}") from exc
        pid = self._read_pid(host, pidfile, exec_id)
        process = DockerProcess(self, name, host, pid, exec_id)
        self._processes[name] = process
        self.state.set_process(name, {"pid": pid, "host": host.name, "argv0": argv[0], "exec_id": exec_id})
        return process

    def _read_pid(self, host: Host, pidfile: str, exec_id: str) -> int:
        deadline = time.monotonic() + PID_WAIT_S
        while time.monotonic() < deadline:
            out = self.execute(host, ["cat", pidfile], check=False).stdout.strip()
            if out.isdigit():
                return int(out)
            if not self.client.api.exec_inspect(exec_id)["Running"]:
                break
            time.sleep(0.02)
        raise RuntimeFailure(f"{host.name}: the process did not start (no pid in {pidfile})")

    def process(self, name: str) -> DockerProcess | None:
        if name not in self._processes:
            info = self.state.data.get("processes", {}).get(name)
            if info is None or "exec_id" not in info:
                return None
            self._processes[name] = DockerProcess(self, name, self.plan.host(info["host"]), int(info["pid"]),
                                                  info["exec_id"])
        return self._processes[name]

    def process_names(self) -> list[str]:
        return sorted(set(self._processes) | set(self.state.data.get("processes", {})))

    def execute(self, host: Host, argv: list[str], *, timeout: float = 30.0,
                input_text: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        if input_text is not None:  # exec_run cannot feed stdin: hand the text over as an argument
            argv = ["sh", "-c", 'printf %s "$1" | { shift; "$@"; }', "stdin", input_text, *argv]
        try:
            result = with_timeout(lambda: self.container(host).exec_run(argv, demux=True,
                                                                         environment={RUN_ENV: self.prefix}), timeout)
        except docker.errors.APIError as exc:
            raise RuntimeFailure(f"{' '.join(argv)} on {host.name}: {exc.explanation or exc}") from exc
        out, err = (part.decode(errors="replace") if part else "" for part in result.output)
        proc = subprocess.CompletedProcess(argv, result.exit_code, out, err)
        if check and proc.returncode != 0:
            raise RuntimeFailure(f"{' '.join(argv)[:200]} on {host.name}: exit {proc.returncode}: "
                                 f"{(err or out).strip()[-300:]}")
        return proc

    # -- firewall ----------------------------------------------------------
    def set_firewall(self, host: Host, rules: str) -> None:
        """One `iptables-restore` of the filter table inside the container; when the daemon runs on this
        machine, the netns runtime's fast path instead (a long-lived iptables-restore in the container's
        network namespace, confirmed by the kernel: milliseconds instead of an exec's few hundred)."""
        def replace_table(table: str) -> None:
            self.execute(host, ["iptables-restore"], input_text=table)
        namespace = self._local_namespace(host)
        if namespace is None:
            replace_table(fault_table(rules))
        else:
            self._firewalls.install(host.name, namespace, rules, replace_table)

    def clear_firewall(self, host: Host) -> None:
        self._firewalls.drop(host.name)
        self.execute(host, ["iptables-restore"], input_text=EMPTY_FILTER_TABLE)

    # -- link shaping (`testbed.runtime.netns_links`, from this machine) ------
    def shape_links(self, host: Host, shaping: LinkShaping) -> None:
        self._links.shape(host, shaping)

    def clear_links(self, host: Host) -> None:
        self._links.clear(host)

    def _enter(self, host: Host) -> list[str]:
        namespace = self._local_namespace(host)
        if namespace is None:
            raise RuntimeFailure(f"{host.name}: the docker runtime shapes links only with a running container on a "
                                 f"daemon on this machine")
        return ["nsenter", f"--net={namespace}"]

    def _local_namespace(self, host: Host) -> str | None:
        """/proc/PID/ns/net of the container's init when the daemon is on this machine (pid visible, ours)."""
        try:
            pid = int(self.container(host).attrs["State"]["Pid"])
            path = f"/proc/{pid}/ns/net"
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except (OSError, KeyError, ValueError, TypeError):
            return None
        return path if pid > 0 and f"{RUN_ENV}={self.prefix}".encode() in environ else None


def container_path(run_dir: Path, path: Path) -> str:
    """Where a container keeps `path`, a path inside the run folder `run_dir`."""
    try:
        return f"{HOST_ROOT}/run/{path.relative_to(run_dir)}"
    except ValueError as exc:
        raise RuntimeFailure(f"{path} is not inside the run folder {run_dir}") from exc


def code_archive() -> bytes:
    """This project's packages as a tar of `src/<package>/...` (what a host runs `python -m ...` from)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for package in CODE_PACKAGES:
            tar.add(REPO_ROOT / package, arcname=f"src/{package}",
                    filter=lambda info: None if "__pycache__" in info.name else info)
    return buffer.getvalue()

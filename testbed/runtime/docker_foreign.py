"""The docker-existing runtime: a Kafka cluster of the user's in containers of theirs (a Docker inventory,
`testbed.docker_inventory`), with faultline's own client containers beside them.

The node hosts are the user's containers, found by name or, with `compose_project`, by the compose labels; their
addresses on the network the brokers share are the plan's, that network's gateway (the daemon's bridge on this
machine) is the control address. Nothing of faultline's goes into them: fault rules are the run's own chains
(`run_chains`, the control address exempt), written from this machine inside each container's network namespace
(`nsenter --net=/proc/<its pid>/ns/net`, so the container needs no iptables and no NET_ADMIN); process faults are
docker's own stop, start, kill, pause and unpause of the role's container, or the inventory's command lines run
inside it (docker exec, sh -c); a role's process is the one listening on its port in its container (`ss` run
here in the container's namespace, as the ssh runtime finds it on a host). A node's ZooKeeper may have a container
of its own in the broker's network namespace, or the broker in the ZooKeeper's (`testbed.runtime.docker_yours`:
docker's stop or kill of the namespace's owner is refused, before the run by the preflight screen and again at the
call). The run's topic's partition directories are read with the daemon's archive API. The client hosts are
containers of faultline's (`faultline/client`, named `<prefix>-azN-client`, labelled with the run) on the brokers'
network, at the highest addresses of its subnet that no other container holds, run exactly as the docker runtime
runs its own (`DockerRuntime` for them, the client under test's venv put in as there). Teardown removes the run's chains from every container and the run's
client containers.
Must never: create, stop, start, change or remove a container or network of the user's but as the inventory says
(never stop or kill the owner of another role's network namespace); write a rule outside the run's chains, or
into this machine's own network namespace (a container with host networking is refused).
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import ipaddress
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import docker
import docker.errors

from testbed.addressing import AddressPlan, Host
from testbed.dist.clients import ClientEnv
from testbed.docker_inventory import DockerInventory, load_docker_inventory
from testbed.errors import RuntimeFailure, UsageError
from testbed.localprocs import is_stopped, net_namespace
from testbed.runtime import run_chains
from testbed.runtime.base import PREFIX_RE, RUN_ENV, Software, owned_names
from testbed.runtime.docker import CLIENT_IMAGE, LABEL, DockerRuntime
from testbed.runtime.docker_api import DEFAULT_HOST, docker_client, remove_prefixed_resources
from testbed.runtime.docker_procs import DockerProcess
from testbed.runtime.docker_yours import daemon, find, native_refusal, net_owner
from testbed.runtime.ssh_foreign import PID_RE
from testbed.state import RunState

ACTIONS = {"stop": "stop", "start": "start", "kill": "kill", "pause": "pause", "resume": "unpause"}
WAIT_S = 60


def _network(inventory: DockerInventory, brokers: dict[str, Any]) -> str:
    shared = set.intersection(*(set(c.attrs["NetworkSettings"].get("Networks") or {}) for c in brokers.values()))
    if inventory.network is not None:
        if inventory.network not in shared:
            raise UsageError(f"inventory {inventory.path}: network {inventory.network} is not a network of "
                             f"every broker's container (they share: {', '.join(sorted(shared)) or 'none'})")
        return inventory.network
    if len(shared) != 1:
        raise UsageError(f"inventory {inventory.path}: the brokers' containers share "
                         f"{len(shared)} networks ({', '.join(sorted(shared)) or 'none'}): name one as network")
    return next(iter(shared))


def resolve(inventory: DockerInventory, nodes: int, client: docker.DockerClient | None = None) -> AddressPlan:
    """The run's plan from the containers as the daemon describes them (read-only): each AZ's node at its broker
    container's address, the clients at the subnet's highest addresses no other container holds, the control
    address the network's gateway. UsageError (one line) for a container that is missing, not running, on host
    networking, or whose ZooKeeper is at another address than its broker."""
    inventory.check_nodes(nodes)
    client = client or daemon(inventory)
    wanted = [n for n in inventory.nodes if int(n.az[2:]) <= nodes]
    brokers = {n.name: find(client, inventory, n.broker) for n in wanted}
    for node in wanted:
        for role in ("broker", "zookeeper"):
            container = brokers[node.name] if role == "broker" else find(client, inventory, node.zookeeper)
            mode = net_owner(client, container).attrs["HostConfig"].get("NetworkMode", "")
            if mode == "host":
                raise UsageError(f"inventory {inventory.path}: {node.entry}: container {container.name} uses the "
                                 f"host's network: a fault rule in it would be this machine's")
            if container.status != "running":
                raise UsageError(f"inventory {inventory.path}: {node.entry}: container {container.name} is "
                                 f"{container.status}, not running")
    owners = {n: net_owner(client, c) for n, c in brokers.items()}  # where each broker's address is
    name = _network(inventory, owners)
    network = client.networks.get(name)
    pool = ((network.attrs.get("IPAM") or {}).get("Config") or [{}])[0]
    subnet = ipaddress.IPv4Network(pool["Subnet"])
    gateway = pool.get("Gateway") or str(next(subnet.hosts()))
    hosts: list[Host] = []
    for node in wanted:
        address = owners[node.name].attrs["NetworkSettings"]["Networks"][name]["IPAddress"]
        zookeeper = net_owner(client, find(client, inventory, node.zookeeper))
        if zookeeper.id != owners[node.name].id:
            theirs = (zookeeper.attrs["NetworkSettings"].get("Networks") or {}).get(name, {}).get("IPAddress")
            if theirs != address:
                raise UsageError(f"inventory {inventory.path}: {node.entry}: its zookeeper {node.zookeeper} is at "
                                 f"{theirs}, its broker at {address}: faultline's AZ model wants one address per "
                                 f"AZ's node (run it in the broker's network namespace)")
        hosts.append(Host(node.name, "node", node.az, int(node.az[2:]), address))
    taken = {gateway, *(h.address for h in hosts)}
    ours = owned_names()
    for container in network.attrs.get("Containers") or {}:
        with contextlib.suppress(docker.errors.NotFound):
            other = client.containers.get(container)
            if not (ours.match(other.name or "") and LABEL in other.labels):
                taken.add(other.attrs["NetworkSettings"]["Networks"][name]["IPAddress"])
    free = [str(a) for a in reversed(list(subnet.hosts())) if str(a) not in taken]
    for node, address in zip(wanted, free, strict=False):
        hosts.append(Host(f"{node.az}-client", "client", node.az, int(node.az[2:]), address))
    hosts.sort(key=lambda h: (h.index, h.role != "node"))
    return AddressPlan(f"docker {name} (inventory {inventory.path})", gateway, subnet.prefixlen, tuple(hosts),
                       cut_ports=tuple(str(p) for p in inventory.ports))


def plan_of(inventory: str, nodes: int) -> AddressPlan:
    return resolve(load_docker_inventory(inventory), nodes)


def preflight(plan: AddressPlan, inventory: str) -> None:
    """The daemon is on this machine (its containers' namespaces reachable through /proc), has the client image."""
    loaded = load_docker_inventory(inventory)
    client = daemon(loaded)
    if str(client.api.base_url) != "http+docker://localhost":
        raise UsageError(f"inventory {loaded.path}: daemon {loaded.host}: fault rules go into the containers' "
                         f"network namespaces from this machine, so the daemon must run here (a unix socket)")
    try:
        client.images.get(CLIENT_IMAGE)
    except docker.errors.ImageNotFound:
        raise UsageError(f"image {CLIENT_IMAGE} is not in the Docker daemon: build it with 'make docker-images'"
                         ) from None


class DockerForeignRuntime:
    """The user's containers as node hosts, faultline's client containers; implements Runtime, Firewalled and
    ForeignHosts; its (client) processes are Pausable."""

    kind = "docker-existing"

    def __init__(self, prefix: str, plan: AddressPlan, state: RunState,
                 client: docker.DockerClient | None = None) -> None:
        if not PREFIX_RE.match(prefix):
            raise RuntimeFailure(f"bad run prefix {prefix!r}")
        self.prefix = prefix
        self.plan = plan
        self.state = state
        self.inventory = load_docker_inventory(state.data["settings"]["inventory"])
        self.client = client or docker_client(state.data.get("docker_host") or self.inventory.host)
        self.clients = DockerRuntime(prefix, plan, state, self.client)  # the run's own client containers

    def containers(self, host: Host) -> list[Any]:
        """The containers of `host`: a node's broker and (if another) ZooKeeper container, a client's own."""
        if host.role == "client":
            return [self.clients.container(host)]
        node = self.inventory.node(host.name)
        found = [find(self.client, self.inventory, node.broker)]
        if node.zookeeper != node.broker:
            found.append(find(self.client, self.inventory, node.zookeeper))
        return found

    def namespaces(self, host: Host) -> list[Any]:
        """The containers whose network namespaces `host`'s containers run in, each once (a node's broker and
        ZooKeeper in one namespace: its owner's)."""
        owners: dict[str, Any] = {}
        for container in self.containers(host):
            owner = net_owner(self.client, container) if host.role == "node" else container
            owners.setdefault(owner.id, owner)
        return list(owners.values())

    # -- lifecycle ---------------------------------------------------------
    def create(self) -> None:
        """Record the user's containers (id, state) and start the run's client containers on their network."""
        self.state.update(docker_host=self.inventory.host or DEFAULT_HOST, yours={
            h.name: [c.id for c in self.containers(h)] for h in self.plan.nodes})
        api = self.client.api
        network = _network(self.inventory, {h.name: net_owner(self.client, self.containers(h)[0])
                                            for h in self.plan.nodes})
        try:
            for host in self.plan.clients:
                name = self.clients.container_name(host)
                self.state.add("containers", name)
                created = api.create_container(
                    CLIENT_IMAGE, command=["sleep", "infinity"], name=name, hostname=host.name,
                    labels={LABEL: self.prefix, "faultline.host": host.name}, environment={RUN_ENV: self.prefix},
                    host_config=api.create_host_config(init=True),
                    networking_config=api.create_networking_config(
                        {network: api.create_endpoint_config(ipv4_address=host.address)}))
                api.start(created["Id"])
        except docker.errors.APIError as exc:
            raise RuntimeFailure(f"creating the client containers on {network}: {exc.explanation or exc}"
                                 ) from exc

    def exists(self) -> bool:
        return bool(self.client.containers.list(all=True, filters={"label": f"{LABEL}={self.prefix}"}))

    def destroy(self) -> None:
        """The run's chains out of every container, the run's client containers removed; the user's stay."""
        for host in self.plan.nodes:
            with contextlib.suppress(RuntimeFailure, UsageError, docker.errors.APIError):
                self.clear_firewall(host)
        remove_prefixed_resources(self.client, self.prefix, networks=False)
        for name in list(self.state.data.get("containers", [])):
            self.state.discard("containers", name)
        self.state.update(processes={})

    # -- software, files, processes: only on the run's client containers ------
    def install(self, host: Host, kafka_version: str) -> Software:
        if host.role == "node":  # the user's: nothing of faultline's goes there
            return Software(java="java", kafka_classpath="", python=("python3",))
        return self.clients.install(host, kafka_version)

    def _ours(self, host: Host) -> None:
        if host.role == "node":
            raise RuntimeFailure(f"{host.name}: faultline runs nothing in your containers")

    def host_path(self, host: Host, path: Path) -> str:
        return self.clients.host_path(host, path)

    def put(self, host: Host, path: Path) -> str:
        self._ours(host)
        return self.clients.put(host, path)

    def fetch(self, host: Host, path: Path) -> None:
        if host.role == "client":
            self.clients.fetch(host, path)

    def spawn(self, host: Host, name: str, argv: list[str], log: Path,
              env: dict[str, str] | None = None) -> DockerProcess:
        self._ours(host)
        return self.clients.spawn(host, name, argv, log, env)

    def client_python(self, host: Host, env: ClientEnv) -> tuple[str, ...]:
        """CarriesClientVenvs: the client under test's venv, put into the run's client container (DockerRuntime's)."""
        self._ours(host)
        return self.clients.client_python(host, env)

    def client_report(self, host: Host, env: ClientEnv) -> dict[str, str]:
        return self.clients.client_report(host, env)

    def process(self, name: str) -> DockerProcess | None:
        return self.clients.process(name)

    def process_names(self) -> list[str]:
        return self.clients.process_names()

    def execute(self, host: Host, argv: list[str], *, timeout: float = 30.0,
                input_text: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        self._ours(host)
        return self.clients.execute(host, argv, timeout=timeout, input_text=input_text, check=check)

    # -- firewall: the run's chains, from this machine, in each container's namespace ----------
    def set_firewall(self, host: Host, rules: str) -> None:
        text = run_chains.restore_text(self.prefix, self.plan.control, rules)
        for container in self.namespaces(host):
            in_namespace(container, run_chains.install_command(self.prefix), text)

    def clear_firewall(self, host: Host) -> None:
        for container in self.namespaces(host):
            in_namespace(container, run_chains.clean_command(self.prefix), None)

    # -- the user's processes (ForeignHosts) ----------------------------------
    def act(self, host: Host, role: str, action: str, timeout: float = 60.0) -> None:
        """The inventory's command line inside the role's container, else docker's own call on it (refused where
        `native_refusal` says)."""
        node = self.inventory.node(host.name)
        container = find(self.client, self.inventory, node.container(role))
        line = node.command(role, action)
        why = native_refusal(self.client, self.inventory, node, role, action)
        if why is not None:
            raise RuntimeFailure(why)
        try:
            if line is not None:
                result = container.exec_run(["sh", "-c", line], demux=True)
                if result.exit_code != 0:
                    said = b"".join(p or b"" for p in result.output).decode(errors="replace").strip()[-300:]
                    raise RuntimeFailure(f"{host.name} ({container.name}): {line!r} exited {result.exit_code}: "
                                         f"{said}")
            elif action == "stop":
                container.stop(timeout=int(timeout))
            else:
                getattr(container, ACTIONS[action])()
        except docker.errors.APIError as exc:
            raise RuntimeFailure(f"{host.name}: {node.says(role, action)}: {exc.explanation or exc}") from exc

    def role_pid(self, host: Host, role: str, port: int) -> int | None:
        """The process listening on `port` in the role's container (`ss` run here in its network namespace; its pid
        as this machine numbers it); None when the container is not running or nothing listens there."""
        container = find(self.client, self.inventory, self.inventory.node(host.name).container(role))
        found = PID_RE.search(in_namespace(container, f"ss -Htlnp 'sport = :{int(port)}'", None))
        return int(found.group(1)) if found else None

    def role_paused(self, host: Host, role: str, port: int) -> bool:
        """Frozen by docker pause (the daemon says so), or stopped by a command line (SIGSTOP: state T)."""
        container = find(self.client, self.inventory, self.inventory.node(host.name).container(role))
        if container.attrs["State"].get("Paused"):
            return True
        pid = self.role_pid(host, role, port)
        return pid is not None and is_stopped(pid)

    def fetch_from(self, host: Host, directory: str, names: str, into: Path) -> list[str]:
        """The entries of the broker container's `directory` matching `names`, through the archive API."""
        container = find(self.client, self.inventory, self.inventory.node(host.name).broker)
        try:
            stream, _ = container.get_archive(directory.rstrip("/") + "/.")
        except docker.errors.NotFound:
            return []
        except docker.errors.APIError as exc:
            raise RuntimeFailure(f"{host.name}: reading {directory}: {exc.explanation or exc}") from exc
        into.mkdir(parents=True, exist_ok=True)
        copied: set[str] = set()
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream)), mode="r") as tar:
            base = Path(directory.rstrip("/")).name
            for member in tar.getmembers():  # named ./entry/... (the daemon's rebase of "dir/."), or dir/entry/...
                parts = Path(member.name).parts
                parts = parts[1:] if parts[:1] in ((".",), (base,)) else parts
                if parts and fnmatch.fnmatchcase(parts[0], names):
                    member.name = str(Path(*parts))
                    tar.extract(member, into, filter="data")
                    copied.add(parts[0])
        return sorted(copied)


def in_namespace(container: Any, command: str, stdin: str | None) -> str:
    """`command` (sh) run here inside `container`'s network namespace, its output (a paused container's too: its
    namespace stays); nothing for a container that is not running (its namespace, and the rules in it, went with
    it)."""
    container.reload()
    pid = int(container.attrs["State"].get("Pid") or 0)
    if container.status not in ("running", "paused") or pid <= 0:
        return ""
    theirs = net_namespace(pid)
    if theirs is None or theirs == net_namespace("self"):
        raise RuntimeFailure(f"container {container.name}: its network namespace is not its own "
                             f"({theirs or 'unreadable'}): no rule goes into this machine's")
    done = subprocess.run(["nsenter", f"--net=/proc/{pid}/ns/net", "sh", "-c", command], input=stdin,
                          capture_output=True, text=True, timeout=WAIT_S)
    if done.returncode != 0:
        raise RuntimeFailure(f"container {container.name}: {command[:80]}: exit {done.returncode}: "
                             f"{(done.stderr or done.stdout).strip()[-300:]}")
    return done.stdout


def clean_leftovers(inventory: DockerInventory, prefix: str | None = None) -> list[str]:
    """What killed runs (or one run) left with the inventory's containers: the run chains in each of them, the runs'
    client containers (labelled and named as a run's). Never a container or network of the user's."""
    client = daemon(inventory)
    removed: list[str] = []
    pattern = owned_names(prefix)
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        if pattern.match(container.name or ""):
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True, v=True)
            removed.append(f"container {container.name}")
    for node in inventory.nodes:
        for name in dict.fromkeys((node.broker, node.zookeeper)):
            with contextlib.suppress(UsageError):
                container = find(client, inventory, name)
                out = in_namespace(container, run_chains.clean_command(prefix), None)
                removed += [f"container {container.name}: chain {c}" for c in out.split()]
    return removed

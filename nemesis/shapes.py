"""Network partitions as data: who must not hear from whom, and the firewall rules that say so.

A *grudge* (Jepsen's word) maps a host name to the set of host names whose
packets it must not receive. Everything here is a pure function of an
`AddressPlan` and plain values: no I/O, no runtime, no clock. Applying a
grudge to real hosts is `nemesis.firewall`'s job.

Shapes work on AZs (an AZ is its node host and its client host) or on host
names directly. The control plane (`plan.control`) is never a host of the
plan, so it is never in a grudge and no rule ever names its address: the
harness always reaches every host.

What "one way" means. `cut_link(plan, "az1", "az2", one_way=True)` drops every
packet whose source is an az1 host and whose destination is an az2 host;
packets from az2 to az1 still arrive. The rules say so twice, on both ends of
each cut pair: the receiver drops it on INPUT (`-s sender`), the sender drops
it on OUTPUT (`-d receiver`), both rules matching only that direction. For
TCP a one-way cut still breaks every connection between the two sides (the
handshake and the ACKs need both directions); what differs from a two-way cut
is which side's packets still arrive, so which side still *hears* the other
(retransmissions, ZooKeeper pings, a broker's fetch requests). A dropped
packet is dropped silently: TCP senders see timeouts, never a refusal.

Scopes. `all` drops every packet of the pair. `kafka` drops TCP packets of the
pair to or from port 9092 (the broker listener) or 9101-9109 (the AZ listeners
an AZ's forwarding proxy connects to, `testbed.kafka.az_proxy`), so both
directions of a connection whichever side is the broker; `zookeeper` does the same for 2181,
2888 and 3888, and for 9093, a KRaft controller's listener (the metadata
quorum's traffic in either mode). Client-side ports are ephemeral (Linux's range starts at
32768), so they never collide with these.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Literal

from testbed.addressing import MAX_NODES, AddressPlan
from testbed.kafka.config import (
    BROKER_PORT,
    CONTROLLER_PORT,
    PROXIED_PORT,
    ZK_CLIENT_PORT,
    ZK_ELECTION_PORT,
    ZK_PEER_PORT,
    az_listener_port,
)
from testbed.runtime.base import FAULT_IN_CHAIN, FAULT_OUT_CHAIN

Grudge = Mapping[str, frozenset[str]]
Scope = Literal["all", "kafka", "zookeeper"]
SCOPES: tuple[Scope, ...] = ("all", "kafka", "zookeeper")
# Each scope's ports as iptables names them: a port, or a range `first:last`.
SCOPE_PORTS: dict[Scope, tuple[str, ...]] = {
    "all": (),
    # The broker listener, the PROXIED listener a request-holding proxy forwards a producer under test to (only a
    # cluster with `proxied_listener` listens there), and the AZ listeners' range (only with `az_listeners`).
    "kafka": (str(BROKER_PORT), str(PROXIED_PORT), f"{az_listener_port(1)}:{az_listener_port(MAX_NODES)}"),
    # The metadata quorum's ports: ZooKeeper's, and a KRaft controller's listener (brokers' heartbeats and
    # metadata fetches, the controllers' votes and log replication); nothing listens on the other mode's.
    "zookeeper": tuple(str(p) for p in (ZK_CLIENT_PORT, ZK_PEER_PORT, ZK_ELECTION_PORT, CONTROLLER_PORT)),
}
IN_CHAIN, OUT_CHAIN = FAULT_IN_CHAIN, FAULT_OUT_CHAIN  # the chains a Firewalled runtime hooks in


# -- hosts ------------------------------------------------------------------
def azs(plan: AddressPlan) -> tuple[str, ...]:
    """The plan's AZ names in order: az1, az2, ..."""
    return tuple(n.az for n in plan.nodes)


def hosts_of_az(plan: AddressPlan, az: str) -> frozenset[str]:
    """Every host of one AZ (its node and its client host)."""
    found = frozenset(h.name for h in plan.hosts if h.az == az)
    if not found:
        raise ValueError(f"no AZ {az!r} in the plan (AZs: {', '.join(azs(plan))})")
    return found


def hosts_of_azs(plan: AddressPlan, names: Iterable[str]) -> frozenset[str]:
    return frozenset().union(*(hosts_of_az(plan, az) for az in names))


def all_hosts(plan: AddressPlan) -> frozenset[str]:
    return frozenset(h.name for h in plan.hosts)


# -- grudge algebra -----------------------------------------------------------
def complete_grudge(components: Sequence[Collection[str]]) -> dict[str, frozenset[str]]:
    """Every host hears only the hosts of its own component (Jepsen's `complete-grudge`).

    Hosts in no component are untouched. Components must not overlap.
    """
    seen: set[str] = set()
    for comp in components:
        overlap = seen & set(comp)
        if overlap:
            raise ValueError(f"components overlap on {sorted(overlap)}")
        seen |= set(comp)
    grudge: dict[str, frozenset[str]] = {}
    for i, comp in enumerate(components):
        others = frozenset().union(*(set(c) for j, c in enumerate(components) if j != i))
        for host in comp:
            if others:
                grudge[host] = others
    return grudge


def one_way_grudge(senders: Collection[str], receivers: Collection[str]) -> dict[str, frozenset[str]]:
    """Receivers stop hearing senders; senders still hear receivers."""
    if set(senders) & set(receivers):
        raise ValueError(f"a host cannot be cut from itself: {sorted(set(senders) & set(receivers))}")
    return {r: frozenset(senders) for r in receivers} if senders else {}


def merge(*grudges: Grudge) -> dict[str, frozenset[str]]:
    """The union of several grudges: a host drops what any of them says it drops."""
    out: dict[str, frozenset[str]] = {}
    for g in grudges:
        for host, peers in g.items():
            if peers:
                out[host] = out.get(host, frozenset()) | peers
    return out


def cut_pairs(grudge: Grudge) -> list[tuple[str, str]]:
    """The grudge as sorted (sender, receiver) pairs: packets from sender to receiver are dropped."""
    return sorted((src, dst) for dst, peers in grudge.items() for src in peers)


def is_cut(grudge: Grudge, sender: str, receiver: str) -> bool:
    return sender in grudge.get(receiver, frozenset())


# -- shapes -------------------------------------------------------------------
def cut_hosts(a: Collection[str], b: Collection[str], one_way: bool = False) -> dict[str, frozenset[str]]:
    """Cut the hosts `a` from the hosts `b`; with `one_way`, only packets from `a` to `b` are dropped."""
    return one_way_grudge(a, b) if one_way else complete_grudge([a, b])


def cut_link(plan: AddressPlan, a: str, b: str, one_way: bool = False) -> dict[str, frozenset[str]]:
    """Cut the link between AZs `a` and `b` (every host of each); other AZs keep both."""
    if a == b:
        raise ValueError(f"cannot cut AZ {a} from itself")
    return cut_hosts(hosts_of_az(plan, a), hosts_of_az(plan, b), one_way)


def isolate_az(plan: AddressPlan, az: str) -> dict[str, frozenset[str]]:
    """The AZ's hosts hear only each other; everyone else hears everyone but them."""
    inside = hosts_of_az(plan, az)
    return complete_grudge([inside, all_hosts(plan) - inside])


def split(plan: AddressPlan, side: Collection[str], other: Collection[str] | None = None
          ) -> dict[str, frozenset[str]]:
    """Two sides of AZs that cannot hear each other (`other` defaults to every remaining AZ).

    AZs on neither side (possible only with an explicit `other`) keep every link.
    """
    side_set = set(side)
    other_set = set(other) if other is not None else set(azs(plan)) - side_set
    if not side_set or not other_set:
        raise ValueError("a split needs at least one AZ on each side")
    if side_set & other_set:
        raise ValueError(f"AZs {sorted(side_set & other_set)} are on both sides")
    return complete_grudge([hosts_of_azs(plan, sorted(side_set)), hosts_of_azs(plan, sorted(other_set))])


def split_minority(plan: AddressPlan, minority: Collection[str]) -> dict[str, frozenset[str]]:
    """A minority of AZs cut from the majority (all the others)."""
    if not 0 < len(set(minority)) < len(azs(plan)) / 2:
        raise ValueError(f"{sorted(minority)} is not a minority of {len(azs(plan))} AZs")
    return split(plan, minority)


def _ordered(plan: AddressPlan, order: Sequence[str] | None) -> list[str]:
    names = list(order) if order is not None else list(azs(plan))
    if sorted(names) != sorted(azs(plan)):
        raise ValueError(f"order {names} must list every AZ of the plan exactly once")
    return names


def bridge(plan: AddressPlan, middle: str | None = None) -> dict[str, frozenset[str]]:
    """Two halves that cannot hear each other, and one AZ, `middle`, that hears both (Jepsen's `bridge`).

    `middle` defaults to the plan's middle AZ; the other AZs, in plan order,
    form the halves: for az1, az2, az3 bridged by az2, az1 and az3 are cut
    from each other and both keep az2.
    """
    names = list(azs(plan))
    middle = middle if middle is not None else names[len(names) // 2]
    if middle not in names:
        raise ValueError(f"no AZ {middle!r} in the plan (AZs: {', '.join(names)})")
    others = [az for az in names if az != middle]
    half = len(others) // 2
    return complete_grudge([hosts_of_azs(plan, others[:half]), hosts_of_azs(plan, others[half:])])


def majorities_ring(plan: AddressPlan, order: Sequence[str] | None = None) -> dict[str, frozenset[str]]:
    """Every AZ hears a majority of AZs, and no two AZs hear the same majority (Jepsen's perfect ring).

    Take each run of m = n//2 + 1 consecutive AZs around the ring `order`; the
    run's middle AZ hears exactly that run. For three AZs the result is a
    one-way ring (az1 misses az2, az2 misses az3, az3 misses az1).
    """
    names = _ordered(plan, order)
    n = len(names)
    m = n // 2 + 1
    grudge: dict[str, frozenset[str]] = {}
    for start in range(n):
        window = [names[(start + k) % n] for k in range(m)]
        middle = window[m // 2]
        deaf_to = hosts_of_azs(plan, [az for az in names if az not in window])
        for host in hosts_of_az(plan, middle):
            grudge[host] = deaf_to
    return grudge


# -- rules --------------------------------------------------------------------
def validate_grudge(plan: AddressPlan, grudge: Grudge) -> None:
    """Refuse a grudge naming a host the plan lacks or cutting a host from itself."""
    known = all_hosts(plan)
    for host, peers in grudge.items():
        unknown = ({host} | set(peers)) - known
        if unknown:
            raise ValueError(f"grudge names hosts not in the plan: {sorted(unknown)}")
        if host in peers:
            raise ValueError(f"grudge cuts {host} from itself")


def scope_covers(scope: Scope, port: int) -> bool:
    """Whether a cut in `scope` drops TCP packets to or from `port`."""
    if scope == "all":
        return True
    spans = (spec.partition(":") for spec in SCOPE_PORTS[scope])
    return any(int(first) <= port <= int(last or first) for first, _, last in spans)


def _matches(scope: Scope, flag: str, address: str, cut_ports: tuple[str, ...] = ()) -> list[str]:
    """The iptables match strings for packets with `flag` (-s/-d) `address` within `scope`; `all` with `cut_ports`
    (a cluster faultline did not make: the plan's) is the TCP packets to or from those ports."""
    ports = cut_ports if scope == "all" else SCOPE_PORTS[scope]
    if not ports:
        return [f"{flag} {address}/32"]
    return [f"{flag} {address}/32 -p tcp --{side} {port}" for port in ports for side in ("dport", "sport")]


def firewall_rules(plan: AddressPlan, cuts: Iterable[tuple[Grudge, Scope]]) -> dict[str, str]:
    """Per host name, the rule lines of the fault chains (iptables-restore syntax) for all `cuts`.

    Every host of the plan gets an entry; an empty string means "no rule".
    Each (grudge, scope) contributes, for every cut pair sender -> receiver,
    INPUT drops on the receiver and OUTPUT drops on the sender. Rules name
    single host addresses only (/32), so the control plane is never matched.
    A plan with `cut_ports` (an existing cluster's) cuts only those TCP ports where the scope is `all`.
    Duplicates across cuts are written once; line order is deterministic.
    """
    lines: dict[str, list[str]] = {h.name: [] for h in plan.hosts}
    for grudge, scope in cuts:
        if scope not in SCOPES:
            raise ValueError(f"unknown scope {scope!r}; expected one of {', '.join(SCOPES)}")
        validate_grudge(plan, grudge)
        for sender, receiver in cut_pairs(grudge):
            s, r = plan.host(sender), plan.host(receiver)
            lines[receiver] += [f"-A {IN_CHAIN} {m} -j DROP" for m in _matches(scope, "-s", s.address, plan.cut_ports)]
            lines[sender] += [f"-A {OUT_CHAIN} {m} -j DROP" for m in _matches(scope, "-d", r.address, plan.cut_ports)]
    return {host: "".join(line + "\n" for line in dict.fromkeys(rules)) for host, rules in lines.items()}

"""Degraded links as data: which packets between which hosts are dropped at random, delayed or throttled.

A *degraded-link map* sends an ordered host pair (sender, receiver) to the
`Degradation` of packets from sender to receiver: a drop probability, an
added delay with jitter, a bandwidth. Like `nemesis.shapes` (the clean cuts),
everything here is a pure function of an `AddressPlan` and plain values; the
`Firewall` installs what it computes, the runtime shapes what it asks.

Where each part takes effect, and why there:
- loss: a rule on the receiver's INPUT, `-s sender -m statistic --mode random
  --probability p -j DROP`. Once per packet, so the drop rate is p; silent,
  like a lossy wire (a sender's OUTPUT drop would tell it at once).
- delay: a rule on the receiver's INPUT sends the pair's packets to an NFQUEUE
  queue that the receiver's delay process (`testbed.runtime.delayq`) holds for
  the delay. One queue per distinct (delay, jitter) on a receiver, numbered
  from 1 in sorted order.
- bandwidth: the sender's egress, one HTB class per distinct rate holding
  every receiver at that rate: each sending host's traffic to the throttled
  side shares one bucket (so an AZ of two hosts sends at most twice the rate).

The union of overlapping degradations of one pair: independent losses
(1 - (1-p1)(1-p2)), delays and jitters added (two slow hops in a row), the
lowest bandwidth. Rules name single host addresses (/32) only, so the
control plane is never matched: the harness always reaches every host at
full speed. Must never: name an address outside the plan.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from nemesis.shapes import IN_CHAIN, all_hosts, hosts_of_az
from testbed.addressing import AddressPlan
from testbed.runtime.base import LinkShaping

Pair = tuple[str, str]  # (sender, receiver)
LOSS_DIGITS = 6  # the statistic match's probability is a 32-bit fraction; six digits say it exactly enough


@dataclass(frozen=True)
class Degradation:
    """What happens to each packet of one direction of a link."""

    loss: float = 0.0  # probability that a packet is dropped, 0 <= loss < 1
    delay_ms: float = 0.0  # added one-way delay
    jitter_ms: float = 0.0  # each packet's delay is delay_ms +- up to jitter_ms (uniform), never reordered
    rate_kbit: int | None = None  # bandwidth, kilobits per second

    def __post_init__(self) -> None:
        if not 0.0 <= self.loss < 1.0:
            raise ValueError(f"loss {self.loss} is not a probability below 1")
        if self.delay_ms < 0 or self.jitter_ms < 0:
            raise ValueError("delay and jitter cannot be negative")
        if self.rate_kbit is not None and self.rate_kbit < 1:
            raise ValueError(f"rate {self.rate_kbit} kbit/s is not positive")

    @property
    def empty(self) -> bool:
        return self == Degradation()

    @property
    def delayed(self) -> bool:
        return self.delay_ms > 0 or self.jitter_ms > 0

    def then(self, other: Degradation) -> Degradation:
        """Both at once: losses independent, delays added, the lower bandwidth."""
        rates = [r for r in (self.rate_kbit, other.rate_kbit) if r is not None]
        return Degradation(loss=round(1 - (1 - self.loss) * (1 - other.loss), 9),
                           delay_ms=self.delay_ms + other.delay_ms, jitter_ms=self.jitter_ms + other.jitter_ms,
                           rate_kbit=min(rates) if rates else None)


Degraded = Mapping[Pair, Degradation]


# -- shapes -------------------------------------------------------------------
def degrade_hosts(a: Collection[str], b: Collection[str], forward: Degradation,
                  backward: Degradation) -> dict[Pair, Degradation]:
    """Packets from every host of `a` to every host of `b` get `forward`; from `b` to `a`, `backward`."""
    overlap = set(a) & set(b)
    if overlap:
        raise ValueError(f"a host cannot be on both ends of a link: {sorted(overlap)}")
    pairs: dict[Pair, Degradation] = {}
    for degradation, senders, receivers in ((forward, a, b), (backward, b, a)):
        if not degradation.empty:
            pairs.update({(s, r): degradation for s in senders for r in receivers})
    return pairs


def degrade_link(plan: AddressPlan, az_a: str, az_b: str, forward: Degradation,
                 backward: Degradation) -> dict[Pair, Degradation]:
    """Every link between the hosts of two AZs."""
    if az_a == az_b:
        raise ValueError(f"cannot degrade AZ {az_a}'s link to itself")
    return degrade_hosts(hosts_of_az(plan, az_a), hosts_of_az(plan, az_b), forward, backward)


def degrade_rest(plan: AddressPlan, hosts: Collection[str], outbound: Degradation,
                 inbound: Degradation) -> dict[Pair, Degradation]:
    """Every link between `hosts` and every other host of the plan (`outbound`: from `hosts`)."""
    return degrade_hosts(hosts, all_hosts(plan) - set(hosts), outbound, inbound)


def union(*maps: Degraded) -> dict[Pair, Degradation]:
    """Several degraded-link maps in force at once: each pair gets every degradation that names it."""
    out: dict[Pair, Degradation] = {}
    for m in maps:
        for pair, degradation in m.items():
            out[pair] = out[pair].then(degradation) if pair in out else degradation
    return {pair: d for pair, d in out.items() if not d.empty}


# -- what hosts must do -----------------------------------------------------------
def validate(plan: AddressPlan, links: Degraded) -> None:
    known = all_hosts(plan)
    for sender, receiver in links:
        unknown = {sender, receiver} - known
        if unknown:
            raise ValueError(f"degraded link names hosts not in the plan: {sorted(unknown)}")
        if sender == receiver:
            raise ValueError(f"degraded link from {sender} to itself")


def delay_queues(links: Degraded) -> dict[str, dict[tuple[float, float], int]]:
    """Per receiver, its queue number for each distinct (delay, jitter) it must apply."""
    wanted: dict[str, set[tuple[float, float]]] = {}
    for (_, receiver), d in links.items():
        if d.delayed:
            wanted.setdefault(receiver, set()).add((d.delay_ms, d.jitter_ms))
    return {host: {dj: n for n, dj in enumerate(sorted(delays), start=1)} for host, delays in wanted.items()}


def link_rules(plan: AddressPlan, links: Degraded) -> dict[str, str]:
    """Per host name, the fault-chain lines (iptables-restore syntax) for the loss and delay of `links`.

    Every host of the plan gets an entry ("" when none). On a receiver, a
    pair's loss rule comes before its queue rule, so a dropped packet is never
    also held; line order is deterministic.
    """
    validate(plan, links)
    queues = delay_queues(links)
    lines: dict[str, list[str]] = {h.name: [] for h in plan.hosts}
    for (sender, receiver), d in sorted(links.items()):
        source = f"-s {plan.host(sender).address}/32"
        if d.loss > 0:
            lines[receiver].append(f"-A {IN_CHAIN} {source} -m statistic --mode random "
                                   f"--probability {round(d.loss, LOSS_DIGITS)} -j DROP")
        if d.delayed:
            queue = queues[receiver][(d.delay_ms, d.jitter_ms)]
            lines[receiver].append(f"-A {IN_CHAIN} {source} -j NFQUEUE --queue-num {queue} --queue-bypass")
    return {host: "".join(line + "\n" for line in rules) for host, rules in lines.items()}


def link_shaping(plan: AddressPlan, links: Degraded) -> dict[str, LinkShaping]:
    """Per host name, what its runtime must shape: egress rates by destination, delay queues to hold."""
    validate(plan, links)
    rates: dict[str, list[tuple[str, int]]] = {h.name: [] for h in plan.hosts}
    for (sender, receiver), d in sorted(links.items()):
        if d.rate_kbit is not None:
            rates[sender].append((plan.host(receiver).address, d.rate_kbit))
    queues = delay_queues(links)
    return {h.name: LinkShaping(rates=tuple(rates[h.name]),
                                delays=tuple((n, delay, jitter) for (delay, jitter), n
                                             in sorted(queues.get(h.name, {}).items(), key=lambda kv: kv[1])))
            for h in plan.hosts}


def needs_shaper(links: Iterable[Degradation]) -> bool:
    """Whether any of these needs the runtime's link shaping (delay or bandwidth), beyond its firewall."""
    return any(d.delayed or d.rate_kbit is not None for d in links)

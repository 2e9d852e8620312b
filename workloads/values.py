"""What a producer sends for each op id: its value, key and partition, as a pure function of the op id.

One definition serves both sides: the producer sends what `ValuePlan` says,
journals only op ids (plus the plan, once, in its first line), and the
history builder recomputes every value, key and partition from that plan.
That keeps the journal small and cheap to write; a plan that changed between
writer and reader would be caught by the drain (phantom values), never hidden.

- value: ``<prefix><op>``, the op id zero-padded to `width` digits when a
  width is set (to reach a fixed value size); unique per op and process.
- partition: ``op % partitions`` (round-robin over explicit partitions).
- key: none, the value itself, or ``k<op % N>`` for ``cycle:N``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ValuePlan:
    prefix: str
    width: int  # 0: no padding
    partitions: int
    key: str  # "none", "value" or "cycle:N"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ValuePlan:
        return cls(prefix=str(data["prefix"]), width=int(data["width"]), partitions=int(data["partitions"]),
                   key=str(data["key"]))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def value(self, op: int) -> str:
        return self.prefix + str(op).zfill(self.width)  # zfill(0) changes nothing

    def partition(self, op: int) -> int:
        return op % self.partitions

    def key_of(self, op: int, value: str) -> str | None:
        if self.key == "none":
            return None
        if self.key == "value":
            return value
        return f"k{op % int(self.key.split(':', 1)[1])}"

    def op_start(self, next_op: int) -> int:
        """Where the digits of any op below `next_op` start in its value (encoded as ASCII).

        Parsing only the significant digits of a zero-padded value is several
        times cheaper than parsing all of them; the producer does it per ack.
        """
        digits = len(str(max(next_op, 1)))
        if self.width and digits < self.width:
            return len(self.prefix) + self.width - digits
        return len(self.prefix)

"""Fault rules on a host faultline does not own the firewall of: the run's own two chains, rewritten by one
`iptables-restore --noflush` per change. Shared by the ssh runtime (run over SSH on the host) and the docker
runtime of a cluster of the user's (`docker_foreign`: run from this machine inside a container's network namespace).

The chains are `<prefix>-in` and `<prefix>-out`, hooked first into INPUT and
OUTPUT. Their first rule accepts the harness's control address, so no
partition ever cuts the harness off its hosts. The rest of the host's filter
table is left as it was (--noflush): only the two chains are replaced, in one
transaction. `clean_chains` removes the chains of any project run, found by name.
Must never: flush or delete a chain whose name is not a project prefix's, or
write a rule into INPUT/OUTPUT other than the jump to the run's chain.
"""

from __future__ import annotations

import shlex

from testbed.runtime.base import FAULT_IN_CHAIN, FAULT_OUT_CHAIN, PREFIX_RE

# $1 in-chain, $2 out-chain; the restore text on stdin. Hooks each chain once, first in its base chain.
INSTALL = ('iptables-restore --noflush || exit 1; '
           'iptables -C INPUT -j "$1" 2>/dev/null || iptables -I INPUT 1 -j "$1" || exit 1; '
           'iptables -C OUTPUT -j "$2" 2>/dev/null || iptables -I OUTPUT 1 -j "$2"')
# $@: chains to remove (hooks first: a hooked chain cannot be deleted).
REMOVE = ('for c in "$@"; do '
          'while iptables -D INPUT -j "$c" 2>/dev/null; do :; done; '
          'while iptables -D OUTPUT -j "$c" 2>/dev/null; do :; done; '
          'iptables -F "$c" 2>/dev/null; iptables -X "$c" 2>/dev/null && echo "$c"; done; exit 0')
# Every chain of a project run: `-N fl1a2b3c-in` lines of iptables -S.
LIST = "iptables -S 2>/dev/null | sed -n 's/^-N \\(fl[0-9a-f]\\{6\\}-\\(in\\|out\\)\\)$/\\1/p'"


def chains(prefix: str) -> tuple[str, str]:
    if not PREFIX_RE.match(prefix):
        raise ValueError(f"bad run prefix {prefix!r}")
    return f"{prefix}-in", f"{prefix}-out"


def restore_text(prefix: str, control: str, rules: str) -> str:
    """`rules` (written for FAULT_IN_CHAIN/FAULT_OUT_CHAIN) moved to the run's chains, the control address first."""
    cin, cout = chains(prefix)
    moved = "".join(
        line.replace(f"-A {FAULT_IN_CHAIN} ", f"-A {cin} ", 1).replace(f"-A {FAULT_OUT_CHAIN} ", f"-A {cout} ", 1)
        + "\n" for line in rules.splitlines() if line.strip())
    return (f"*filter\n:{cin} - [0:0]\n:{cout} - [0:0]\n"
            f"-A {cin} -s {control}/32 -j ACCEPT\n-A {cout} -d {control}/32 -j ACCEPT\n{moved}COMMIT\n")


def install_command(prefix: str) -> str:
    return f"sh -c {shlex.quote(INSTALL)} install " + " ".join(chains(prefix))


def remove_command(names: list[str]) -> str:
    return f"sh -c {shlex.quote(REMOVE)} remove " + " ".join(shlex.quote(n) for n in names)


def clean_command(prefix: str | None) -> str:
    """Remove the chains of one run (or of every project run) with their hooks; prints the chains removed."""
    if prefix is not None:
        return remove_command(list(chains(prefix)))
    return f"sh -c {shlex.quote(REMOVE)} remove $({LIST})"

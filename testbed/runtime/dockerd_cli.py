"""`python -m testbed.runtime.dockerd_cli list|clean [PREFIX]|start PREFIX|stop PREFIX|with-daemon -- CMD...`.

The project's dockerds by hand. `make docker-clean` runs `clean`; the make
targets with RUNTIME=docker run their command `with-daemon`: DOCKER_HOST or the
default socket if a daemon answers there, else a dockerd of the project's own,
started for the command and stopped after it. Must never: stop a dockerd this
project did not start.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

from testbed.errors import RuntimeFailure
from testbed.runtime.base import new_prefix
from testbed.runtime.dockerd import (
    daemon_answers,
    find_leftover_dockerds,
    start_dockerd,
    stop_leftover_dockerds,
)


def main(argv: list[str]) -> int:
    """`python -m testbed.runtime.dockerd_cli list|clean|start PREFIX|stop PREFIX` for make and by hand."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    action, *rest = argv or ["list"]
    try:
        if action == "list":
            for own in find_leftover_dockerds():
                print(json.dumps({"prefix": own.prefix, "pid": own.pid, "host": own.host,
                                  "data_root": str(own.data_root)}))
        elif action == "clean":
            removed = stop_leftover_dockerds(rest[0] if rest else None)
            print("\n".join(["removed:", *removed]) if removed else "no faultline dockerd to clean")
        elif action == "start" and len(rest) == 1:
            own = start_dockerd(rest[0])
            print(f"export DOCKER_HOST={own.host}  # pid {own.pid}, answered after {own.started_s:.1f} s")
        elif action == "with-daemon" and rest[:1] == ["--"] and len(rest) > 1:
            return with_daemon(rest[1:])
        elif action == "stop" and len(rest) == 1:
            removed = stop_leftover_dockerds(rest[0])
            print("\n".join(["removed:", *removed]) if removed else f"no faultline dockerd {rest[0]}")
        else:
            print("usage: python -m testbed.runtime.dockerd_cli list|clean [PREFIX]|start PREFIX|stop PREFIX|"
                  "with-daemon -- CMD...",
                  file=sys.stderr)
            return 3
    except RuntimeFailure as exc:
        print(f"faultline: {exc}", file=sys.stderr)
        return exc.exit_status
    return 0


def with_daemon(argv: list[str]) -> int:
    """Run `argv` against a Docker daemon, starting the project's own when none answers; its exit status."""
    if daemon_answers():
        return subprocess.run(argv).returncode
    own = start_dockerd(new_prefix())
    try:
        return subprocess.run(argv, env={**os.environ, "DOCKER_HOST": own.host}).returncode
    finally:
        own.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Provisioning an ssh host: Kafka's jars once per host and version, a venv once per client host, this run's code.

What a host keeps between runs lives under `<root>/cache/` (the inventory's
root): `kafka-<version>-<sha12>/libs` (testbed.dist.archives: a tar of the Maven cache's jars,
uploaded over SFTP, checked with sha256sum, unpacked, marked complete last),
`venv-<key>` (python3 -m venv, then pip install --no-index from a wheelhouse
built on this machine for the host's Python and glibc) and, per client under
test, `venv-ck-<X>-<key>` (the same, with confluent-kafka X's wheel alone; its
`faultline-client.json` is what the venv reports of itself, as
testbed.dist.clients's). A later run finds the marker and uploads nothing. This run's code goes to `<root>/runs/<prefix>/src`
and leaves with the run.
Must never: reuse a cached directory whose completion marker does not name the
checksum (or key) of what it should hold, or need a package index on the host.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import shlex
import tarfile
import tempfile
import threading
from pathlib import Path

from testbed.dist.archives import kafka_archive, tar_dir
from testbed.dist.clients import MARKER as CLIENT_MARKER
from testbed.dist.clients import PROBE, parse_client
from testbed.errors import RuntimeFailure
from testbed.runtime.docker import code_archive
from testbed.runtime.ssh_conn import SshConnection
from testbed.wheelhouse import client_requirements, client_wheels, wheelhouse

MARKER = ".complete"
_LOCAL = threading.Lock()  # hosts are provisioned in parallel; the local archives and wheelhouse are made once
log = logging.getLogger("faultline.runtime")

FACTS = ("python3 -c 'import json, platform, sys; print(json.dumps({\"python\": \"%d.%d\" % sys.version_info[:2], "
         "\"libc\": platform.libc_ver(), \"machine\": platform.machine()}))'")


def _cached(conn: SshConnection, directory: str, key: str, *reports: str) -> str | None:
    """When `directory` is complete (its MARKER says `key`), the text of its `reports` files (none: ""); else None.
    One round trip for both."""
    files = " ".join(shlex.quote(f"{directory}/{name}") for name in (MARKER, *reports))
    status, out, _ = conn.run(f"cat {files}")
    marker, _, rest = out.decode(errors="replace").partition("\n")
    return rest if status == 0 and marker.strip() == key and (reports or not rest.strip()) else None


def upload_checked(conn: SshConnection, archive: Path, digest: str, directory: str) -> None:
    """SFTP `archive` to the host, verify its sha256 there, unpack it into `directory`, mark it complete."""
    part = f"{directory}.tar.part"
    conn.check(f"mkdir -p {shlex.quote(str(Path(directory).parent))}")
    conn.sftp_put(archive, part)
    q, qp = shlex.quote(directory), shlex.quote(part)
    status, out, err = conn.run(f"echo {digest}'  '{qp} | sha256sum -c - >/dev/null", timeout=120)
    if status != 0:
        conn.run(f"rm -f {qp}")
        raise RuntimeFailure(f"{conn.host.name}: {archive.name} arrived corrupted (sha256 differs: "
                             f"{(err or out).decode(errors='replace').strip()[-200:]})")
    conn.check(f"rm -rf {q} && mkdir -p {q} && tar -xf {qp} -C {q} && rm -f {qp} && echo {digest} > {q}/{MARKER}",
               timeout=300)


def ensure_kafka_on(conn: SshConnection, root: str, version: str) -> str:
    """Kafka `version`'s jars on the host (uploaded unless a complete copy is there); the classpath there."""
    with _LOCAL:
        archive, digest = kafka_archive(version)
    directory = f"{root}/cache/kafka-{version}-{digest[:12]}"
    if _cached(conn, directory, digest) is not None:
        log.info("ssh: %s already has Kafka %s (sha256 %s): reusing it, nothing uploaded",
                 conn.host.name, version, digest[:12])
    else:
        log.info("ssh: uploading Kafka %s to %s (%.0f MB, sha256 %s)", version, conn.host.name,
                 archive.stat().st_size / 1e6, digest[:12])
        upload_checked(conn, archive, digest, directory)
    return f"{directory}/libs/*"


def host_facts(conn: SshConnection) -> dict[str, object]:
    """The host's Python version, libc and machine (what its wheels must fit)."""
    out = conn.check(FACTS)
    try:
        facts: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise RuntimeFailure(f"{conn.host.name}: cannot read its Python's facts ({out[-200:]!r})") from exc
    return facts


def ensure_venv_on(conn: SshConnection, root: str) -> str:
    """A venv with the client dependencies on the host (made unless a complete one is there); its python."""
    facts = host_facts(conn)
    requirements = client_requirements()
    with _LOCAL:
        wheels = wheelhouse(facts, requirements)
    key = hashlib.sha256(json.dumps([facts, requirements, sorted(w.name for w in wheels.glob("*.whl"))])
                         .encode()).hexdigest()[:16]
    venv = f"{root}/cache/venv-{key}"
    python = f"{venv}/bin/python"
    if _cached(conn, venv, key) is not None:
        log.info("ssh: %s already has the client venv %s: reusing it", conn.host.name, key)
        return python
    log.info("ssh: installing the client venv on %s (%d wheels)", conn.host.name, len(list(wheels.glob("*.whl"))))
    _install_venv(conn, venv, wheels, requirements)
    conn.check(f"echo {key} > {shlex.quote(venv)}/{MARKER}")
    return python


def _install_venv(conn: SshConnection, venv: str, wheels: Path, requirements: list[str]) -> None:
    """A venv at `venv` made by the host's python3 with `requirements` from `wheels` (uploaded, checked, installed
    with --no-index, removed); the caller marks it complete."""
    with tempfile.TemporaryDirectory(prefix="faultline-wheels-") as tmp:
        (Path(tmp) / "requirements.txt").write_text("\n".join(requirements) + "\n")
        for wheel in wheels.glob("*.whl"):
            (Path(tmp) / wheel.name).symlink_to(wheel)
        archive = Path(tmp).with_suffix(".tar")
        try:
            digest = tar_dir(Path(tmp), archive, "wheels")
            upload_checked(conn, archive, digest, f"{venv}.wheels")
        finally:
            archive.unlink(missing_ok=True)
    q, qw = shlex.quote(venv), shlex.quote(f"{venv}.wheels/wheels")
    conn.check(f"rm -rf {q} && python3 -m venv {q} && {q}/bin/python -m pip install -q --no-index "
               f"--disable-pip-version-check --no-cache-dir --find-links {qw} -r {qw}/requirements.txt && "
               f"rm -rf {shlex.quote(venv + '.wheels')}", timeout=600)


def ensure_client_venv_on(conn: SshConnection, root: str, version: str) -> tuple[str, dict[str, str]]:
    """A venv of confluent-kafka `version` on the host, made by its own python3 from the wheel downloaded here for
    its Python and glibc (unless a complete one is there); its python and what it reports of itself
    (confluent_kafka, librdkafka, python). DistributionError (one line) when the version has no such wheel."""
    parse_client(version)
    facts = host_facts(conn)
    with _LOCAL:
        wheels = client_wheels(facts, version)
    names = sorted(w.name for w in wheels.glob("*.whl"))
    key = hashlib.sha256(json.dumps([facts, version, names]).encode()).hexdigest()[:16]
    venv = f"{root}/cache/venv-ck-{version}-{key}"
    q = shlex.quote(venv)
    out = _cached(conn, venv, key, CLIENT_MARKER)  # complete, and what it reports
    if out is not None:
        log.info("ssh: %s already has the venv of confluent-kafka %s: reusing it", conn.host.name, version)
    else:
        log.info("ssh: installing confluent-kafka %s on %s (%s)", version, conn.host.name, ", ".join(names))
        _install_venv(conn, venv, wheels, [f"confluent-kafka=={version}"])
        out = conn.check(f"{q}/bin/python -c {shlex.quote(PROBE)} > {q}/{CLIENT_MARKER} && echo {key} > {q}/{MARKER}"
                         f" && cat {q}/{CLIENT_MARKER}", timeout=120)
    try:
        versions: dict[str, str] = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise RuntimeFailure(f"{conn.host.name}: the venv of confluent-kafka {version} reports {out[-200:]!r}") from exc
    return f"{venv}/bin/python", versions


def put_code(conn: SshConnection, run_root: str) -> str:
    """This project's packages, as they are now, into `<run_root>/src`; PYTHONPATH for them."""
    q = shlex.quote(run_root)
    conn.check(f"mkdir -p {q} && tar -x -C {q}", stdin=code_archive(), timeout=120)
    return f"{run_root}/src"


def tar_bytes(path: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(path, arcname=path.name)
    return buffer.getvalue()

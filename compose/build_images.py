#!/usr/bin/env python3
"""Build faultline's images without a network: `make docker-images` (see compose/README.md).

    faultline/base:bookworm   a Debian rootfs made by mmdebstrap from this machine's apt sources, docker import
    faultline/kafka:VERSION   the base + Kafka's jars from the Maven cache (~/.cache/faultline/kafka-VERSION/libs)
    faultline/client:TAG      the base + a venv (wheels downloaded on the host) + this project's code;
                              TAG is a digest of everything that went in, `latest` names the newest

The daemon: DOCKER_HOST if set, else the default socket if it answers, else a
dockerd of our own (testbed.runtime.dockerd) that is stopped again at the end;
`--daemon own` always starts our own. An image that exists and was built from
the same inputs (the base's id included) is skipped unless forced. Every build
runs with network mode none and pull=False: nothing is fetched from a registry.

Must never: run apt or pip against an index inside a build, pull an image
(except a user-named BASE_IMAGE that is not there), or remove an image that is
not one of ours (label faultline.image).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's packages, not whatever .venv's editable install points at

import docker  # noqa: E402
import docker.errors  # noqa: E402
from client_inputs import client_requirements, project_sources, wheelhouse  # noqa: E402  (compose/, beside this)

from checkers.argparser import ArgumentParser  # noqa: E402
from testbed.dist.kafka import DEFAULT_VERSION, SCALA_BINARY, ensure_kafka  # noqa: E402
from testbed.errors import HarnessError, RuntimeFailure  # noqa: E402
from testbed.runtime.dockerd import DEFAULT_HOST, OwnDockerd, daemon_answers, docker_client, start_dockerd  # noqa: E402

COMPOSE = REPO / "compose"
BASE_TAG = "faultline/base:bookworm"
KAFKA_REPO = "faultline/kafka"
CLIENT_REPO = "faultline/client"
SUITE = "bookworm"
APT_SOURCES = (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list"))
# Host apt settings the rootfs's apt needs too (a proxy, a snapshot mirror's expired Release files).
APT_CONF_KEYS = re.compile(r"Acquire::(\w+::)?(Proxy|Check-Valid-Until|Check-Date)", re.IGNORECASE)
IMAGES = ("base", "kafka", "client")
DIGEST_TAG = re.compile(rf"^{CLIENT_REPO}:[0-9a-f]{{12}}$")


@dataclass
class Outcome:
    image: str
    action: str  # built / skipped / used
    seconds: float
    size: int
    note: str = ""


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description="Build faultline's Docker images without a network.")
    parser.add_argument("--base-image", default="", help=f"use this image as the base instead of building {BASE_TAG}")
    parser.add_argument("--kafka-version", default=DEFAULT_VERSION)
    parser.add_argument("--client-tag", default="", help="tag of faultline/client (default: a digest of its inputs)")
    parser.add_argument("--force", default="", help="rebuild even if present: 1/all, or a list such as client,kafka")
    parser.add_argument("--daemon", choices=("auto", "own"), default="auto",
                        help="auto: DOCKER_HOST, else the default socket, else our own dockerd; own: always our own")
    parser.add_argument("--apt-sources", type=Path, default=None, help="apt sources for mmdebstrap (default: this machine's)")
    parser.add_argument("--only", default=",".join(IMAGES), help="which images: base,kafka,client")
    args = parser.parse_args(argv)
    force = _image_set(args.force, allow_all=True)
    only = _image_set(args.only, allow_all=False)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` stops our dockerd

    prefix = "fl" + secrets.token_hex(3)
    own: OwnDockerd | None = None
    outcomes: list[Outcome] = []
    began = time.monotonic()
    try:
        client, own = connect(args.daemon, prefix)
        with contextlib.closing(client):
            base = ensure_base(client, args.base_image, "base" in force, args.apt_sources, outcomes)
            facts = probe_base(client, base, prefix)
            print(f"base {base}: Python {facts['python']}, {facts['libc'][0]} {facts['libc'][1]}, {facts['machine']}")
            if "kafka" in only:
                ensure_kafka_image(client, base, args.kafka_version, "kafka" in force, outcomes)
            if "client" in only:
                ensure_client_image(client, base, facts, args.client_tag, "client" in force, outcomes)
            with contextlib.suppress(docker.errors.APIError):
                client.images.prune(filters={"dangling": True, "label": "faultline.image"})
    except (HarnessError, docker.errors.DockerException) as exc:
        print(f"faultline: docker-images: {' '.join(str(exc).split())}", file=sys.stderr)
        return 3
    finally:
        if own is not None:
            stopped = time.monotonic()
            own.stop()
            print(f"stopped our dockerd {own.prefix} in {time.monotonic() - stopped:.1f} s")
    print(summary(outcomes, time.monotonic() - began, own))
    return 0


def connect(mode: str, prefix: str) -> tuple[docker.DockerClient, OwnDockerd | None]:
    if mode == "auto" and os.environ.get("DOCKER_HOST"):
        print(f"daemon: DOCKER_HOST={os.environ['DOCKER_HOST']}")
        return docker_client(timeout=600), None
    if mode == "auto" and daemon_answers(DEFAULT_HOST):
        print(f"daemon: {DEFAULT_HOST}")
        return docker_client(DEFAULT_HOST, timeout=600), None
    own = start_dockerd(prefix)
    print(f"daemon: our own dockerd {own.prefix} (pid {own.pid}, DOCKER_HOST={own.host}, data root "
          f"{own.data_root}), answering after {own.started_s:.1f} s")
    try:
        return own.client(timeout=600), own
    except BaseException:
        own.stop()
        raise


# --- faultline/base -------------------------------------------------------------------------------------


def base_packages() -> list[str]:
    return [line.strip() for line in (COMPOSE / "base" / "packages.txt").read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def ensure_base(client: docker.DockerClient, base_image: str, force: bool, apt_sources: Path | None,
                outcomes: list[Outcome]) -> str:
    """The base image's name: BASE_IMAGE (pulled only if absent), else faultline/base:bookworm, built if needed."""
    if base_image and base_image != BASE_TAG:
        began = time.monotonic()
        try:
            image = client.images.get(base_image)
            action = "used"
        except docker.errors.ImageNotFound:
            print(f"BASE_IMAGE {base_image} is not here; pulling it")
            try:
                image = client.images.pull(base_image)
            except docker.errors.APIError as exc:
                raise RuntimeFailure(f"BASE_IMAGE {base_image}: neither present nor pullable ({exc.explanation})") from exc
            action = "pulled"
        outcomes.append(Outcome(base_image, action, time.monotonic() - began, image.attrs["Size"]))
        return base_image
    existing = _image(client, BASE_TAG)
    if existing is not None and not force:
        outcomes.append(Outcome(BASE_TAG, "skipped", 0.0, existing.attrs["Size"], "exists (FORCE=base rebuilds)"))
        return BASE_TAG
    if shutil.which("mmdebstrap") is None:
        raise RuntimeFailure("mmdebstrap not found: install it (make setup-docker, or apt-get install mmdebstrap), "
                             "or set BASE_IMAGE to an image with the packages of compose/base/packages.txt")
    workdir = Path(tempfile.mkdtemp(prefix="faultline-rootfs-", dir="/var/tmp"))
    try:
        rootfs = workdir / "rootfs.tar"
        began = time.monotonic()
        make_rootfs(rootfs, apt_sources)
        made = time.monotonic() - began
        print(f"rootfs: {rootfs.stat().st_size / 1e6:.0f} MB in {made:.1f} s; importing")
        began = time.monotonic()
        packages = base_packages()
        changes = [
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "ENV LANG=C.UTF-8",
            'ENTRYPOINT ["/usr/bin/tini", "--"]',
            'CMD ["/bin/bash"]',
            f'LABEL faultline.image=base faultline.suite={SUITE} faultline.packages="{" ".join(packages)}"',
        ]
        repository, tag = BASE_TAG.split(":")
        client.api.import_image_from_file(str(rootfs), repository=repository, tag=tag, changes=changes)
        imported = time.monotonic() - began
        image = client.images.get(BASE_TAG)
        outcomes.append(Outcome(BASE_TAG, "built", made + imported, image.attrs["Size"],
                                f"mmdebstrap {made:.1f} s + import {imported:.1f} s"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return BASE_TAG


def make_rootfs(target: Path, apt_sources: Path | None) -> None:
    sources = apt_sources or next((p for p in APT_SOURCES if p.is_file()), None)
    if sources is None or not sources.is_file():
        raise RuntimeFailure(f"no apt sources for mmdebstrap (looked for {', '.join(map(str, APT_SOURCES))}); "
                             "pass --apt-sources FILE (APT_SOURCES=...)")
    aptopts = [f"--aptopt={p}" for p in sorted(Path("/etc/apt/apt.conf.d").glob("*"))
               if p.is_file() and APT_CONF_KEYS.search(p.read_text(errors="replace"))]
    argv = [
        "mmdebstrap", "--variant=apt", f"--include={','.join(base_packages())}", *aptopts,
        "--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/doc/*",
        "--dpkgopt=path-include=/usr/share/doc/*/copyright", "--dpkgopt=path-exclude=/usr/share/locale/*",
        "--dpkgopt=path-exclude=/usr/share/info/*",
        # update-alternatives (java's man page link) needs the directory even though pages are excluded
        '--essential-hook=mkdir -p "$1/usr/share/man/man1"',
        # no host apt settings, package lists or ssh host keys in the image
        '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/etc/ssh/ssh_host_* '
        '"$1"/etc/apt/apt.conf.d/99mmdebstrap',
        SUITE, str(target), str(sources),
    ]
    print(f"mmdebstrap {SUITE} from {sources}{' with ' + ', '.join(a.split('=', 1)[1] for a in aptopts) if aptopts else ''}")
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr + proc.stdout).splitlines() if line.startswith(("E:", "W:"))]
        raise RuntimeFailure(f"mmdebstrap failed (exit {proc.returncode}): {' | '.join(lines[-3:]) or proc.stderr[-300:]}")


def probe_base(client: docker.DockerClient, base: str, prefix: str) -> dict[str, Any]:
    """What the images need from the base, checked in a throwaway container: commands, Python, libc."""
    script = (
        'missing=""; for c in java python3 iptables iptables-restore iptables-save ip ps /usr/bin/tini; do '
        'command -v "$c" >/dev/null 2>&1 || missing="$missing $c"; done; '
        'python3 -c "import ensurepip, venv" 2>/dev/null || missing="$missing python3-venv(ensurepip)"; '
        'if [ -n "$missing" ]; then echo "MISSING:$missing"; exit 0; fi; '
        "python3 -c 'import json, platform, sys; print(json.dumps({\"python\": \"%d.%d\" % sys.version_info[:2], "
        "\"libc\": platform.libc_ver(), \"machine\": platform.machine()}))'"
    )
    try:
        out = client.containers.run(base, entrypoint=["/bin/sh", "-c"], command=[script], name=f"{prefix}-probe",
                                     network_mode="none", remove=True, stdout=True, stderr=True)
    except docker.errors.ContainerError as exc:
        raise RuntimeFailure(f"base {base} cannot run /bin/sh: {exc}") from exc
    text = out.decode(errors="replace").strip().splitlines()[-1] if out.strip() else ""
    if text.startswith("MISSING:"):
        raise RuntimeFailure(f"base {base} lacks{text.removeprefix('MISSING:')}: it needs the packages of "
                             "compose/base/packages.txt (or leave BASE_IMAGE unset)")
    facts: dict[str, Any] = json.loads(text)
    if facts["libc"][0] != "glibc":
        raise RuntimeFailure(f"base {base} has no glibc ({facts['libc']}): the client wheels are manylinux")
    return facts


# --- faultline/kafka ------------------------------------------------------------------------------------


def ensure_kafka_image(client: docker.DockerClient, base: str, version: str, force: bool,
                       outcomes: list[Outcome]) -> str:
    tag = f"{KAFKA_REPO}:{version}"
    libs = ensure_kafka(version)  # from the cache; fetched with mvn from Maven Central if absent
    jars = sorted(libs.glob("*.jar"))
    base_id = client.images.get(base).id
    inputs = _digest([("Dockerfile", (COMPOSE / "kafka" / "Dockerfile").read_bytes()),
                      ("log4j", (COMPOSE / "kafka" / "log4j.properties").read_bytes()),
                      ("version", version.encode()), ("base", base_id.encode()),
                      *((f"jar/{j.name}", str(j.stat().st_size).encode()) for j in jars)])
    skipped = _skip(client, tag, inputs, force, outcomes)
    if skipped:
        return tag
    with tempfile.TemporaryDirectory(prefix="faultline-kafka-ctx-") as ctx:
        context = Path(ctx)
        shutil.copy2(COMPOSE / "kafka" / "Dockerfile", context / "Dockerfile")
        shutil.copy2(COMPOSE / "kafka" / "log4j.properties", context / "log4j.properties")
        (context / "libs").mkdir()
        for jar in jars:
            shutil.copy2(jar, context / "libs" / jar.name)
        if not (context / "libs" / f"kafka_{SCALA_BINARY}-{version}.jar").exists():
            raise RuntimeFailure(f"{libs} has no kafka_{SCALA_BINARY}-{version}.jar: run make setup-kafka KAFKA_VERSION={version}")
        began = time.monotonic()
        build(client, context, tag, {"BASE_IMAGE": base, "KAFKA_VERSION": version},
              {"faultline.image": "kafka", "faultline.inputs": inputs, "faultline.base-id": base_id,
               "faultline.kafka-version": version}, nocache=force)
    image = client.images.get(tag)
    outcomes.append(Outcome(tag, "built", time.monotonic() - began, image.attrs["Size"], f"{len(jars)} jars"))
    return tag


# --- faultline/client -----------------------------------------------------------------------------------


def ensure_client_image(client: docker.DockerClient, base: str, facts: dict[str, Any], tag: str, force: bool,
                        outcomes: list[Outcome]) -> str:
    requirements = client_requirements()
    wheels_dir = wheelhouse(facts, requirements)
    wheels = sorted(wheels_dir.glob("*.whl"))
    sources = project_sources()
    base_id = client.images.get(base).id
    dockerfile = (COMPOSE / "client" / "Dockerfile").read_bytes()
    inputs = _digest([("Dockerfile", dockerfile), ("requirements", "\n".join(requirements).encode()),
                      ("base", base_id.encode()), *((f"wheel/{w.name}", b"") for w in wheels),
                      *((f"src/{rel}", path.read_bytes()) for rel, path in sources)])
    name = f"{CLIENT_REPO}:{tag or inputs.removeprefix('sha256:')[:12]}"
    if not _skip(client, name, inputs, force, outcomes):
        with tempfile.TemporaryDirectory(prefix="faultline-client-ctx-") as ctx:
            context = Path(ctx)
            (context / "Dockerfile").write_bytes(dockerfile)
            (context / "requirements.txt").write_text("\n".join(requirements) + "\n")
            (context / "wheels").mkdir()
            for wheel in wheels:
                shutil.copy2(wheel, context / "wheels" / wheel.name)
            for rel, path in sources:
                (context / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, context / "src" / rel)
            began = time.monotonic()
            build(client, context, name, {"BASE_IMAGE": base},
                  {"faultline.image": "client", "faultline.inputs": inputs, "faultline.base-id": base_id},
                  nocache=force)
        image = client.images.get(name)
        outcomes.append(Outcome(name, "built", time.monotonic() - began, image.attrs["Size"],
                                f"{len(wheels)} wheels, {len(sources)} source files"))
    image = client.images.get(name)
    image.tag(CLIENT_REPO, "latest")
    # Superseded digest-tagged builds go (a CLIENT_TAG someone chose stays).
    for old in client.images.list(name=CLIENT_REPO, filters={"label": "faultline.image=client"}):
        if old.id != image.id and old.tags and all(DIGEST_TAG.match(t) for t in old.tags):
            with contextlib.suppress(docker.errors.APIError):
                for old_tag in old.tags:
                    client.images.remove(old_tag)
                print(f"removed superseded {', '.join(old.tags)}")
    return name


# --- helpers --------------------------------------------------------------------------------------------


def build(client: docker.DockerClient, context: Path, tag: str, buildargs: dict[str, str],
          labels: dict[str, str], nocache: bool) -> None:
    """`docker build` with no network and no pull; progress lines to stdout; RuntimeFailure on error."""
    print(f"building {tag}{' (no cache)' if nocache else ''}")
    tail: list[str] = []
    for chunk in client.api.build(path=str(context), tag=tag, buildargs=buildargs, labels=labels, rm=True,
                                  forcerm=True, pull=False, nocache=nocache, network_mode="none", decode=True):
        if "error" in chunk:
            detail = " | ".join(line for line in tail[-5:] if line)
            raise RuntimeFailure(f"building {tag}: {chunk['error'].strip()} (last output: {detail})")
        for line in chunk.get("stream", "").splitlines():
            tail = (tail + [line.strip()])[-20:]
            if line.startswith("Step ") or "client ok" in line or line.startswith(("openjdk", "2.")):
                print(f"  {line.strip()}")


def _skip(client: docker.DockerClient, name: str, inputs: str, force: bool, outcomes: list[Outcome]) -> bool:
    image = _image(client, name)
    if image is None:
        return False
    if force:
        print(f"{name}: rebuilding (forced)")
        return False
    if image.labels.get("faultline.inputs") != inputs:
        print(f"{name}: built from other inputs (sources, jars or base changed); rebuilding")
        return False
    outcomes.append(Outcome(name, "skipped", 0.0, image.attrs["Size"], "exists, same inputs"))
    return True


def _image(client: docker.DockerClient, name: str) -> Any:
    try:
        return client.images.get(name)
    except docker.errors.ImageNotFound:
        return None


def _digest(parts: Iterable[tuple[str, bytes]]) -> str:
    h = hashlib.sha256()
    for key, value in parts:
        h.update(key.encode() + b"\0" + hashlib.sha256(value).digest())
    return "sha256:" + h.hexdigest()


def _image_set(value: str, allow_all: bool) -> set[str]:
    value = value.strip().lower()
    if value in ("", "0", "no", "false"):
        return set()
    if allow_all and value in ("1", "yes", "true", "all"):
        return set(IMAGES)
    chosen = {v.strip() for v in value.split(",") if v.strip()}
    unknown = chosen - set(IMAGES)
    if unknown:
        raise SystemExit(f"faultline: docker-images: unknown image(s) {', '.join(sorted(unknown))}; "
                         f"expected {', '.join(IMAGES)}")
    return chosen


def summary(outcomes: list[Outcome], total: float, own: OwnDockerd | None) -> str:
    lines = ["", f"{'image':<40} {'action':<8} {'seconds':>8} {'size MB':>8}  note"]
    for o in outcomes:
        lines.append(f"{o.image:<40} {o.action:<8} {o.seconds:>8.1f} {o.size / 1e6:>8.0f}  {o.note}")
    where = f"our dockerd's data root {own.data_root}" if own else "the daemon above"
    lines.append(f"total {total:.1f} s; images are in {where}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

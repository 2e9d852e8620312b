"""What goes into faultline/client besides the base: pinned requirements, a wheelhouse, this project's sources.

Used by build_images.py (beside it). The wheels are downloaded once on the host
(PyPI, the one index this machine reaches) for the base's Python and glibc, and
kept in the cache; nothing is fetched inside a build.
"""

from __future__ import annotations

from pathlib import Path

from testbed.wheelhouse import client_requirements, wheelhouse  # noqa: F401  (build_images imports them from here)

REPO = Path(__file__).resolve().parent.parent
COMPOSE = REPO / "compose"
PROJECT_PACKAGES = ("testbed", "workloads", "harness", "nemesis", "checkers")
SOURCE_SUFFIXES = {".py", ".html", ".j2", ".css", ".js", ".json", ".typed"}


def project_sources() -> list[tuple[str, Path]]:
    files = []
    for package in PROJECT_PACKAGES:
        for path in sorted((REPO / package).rglob("*")):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            if path.suffix in SOURCE_SUFFIXES or path.parent.name == "templates":
                files.append((str(path.relative_to(REPO)), path))
    return files

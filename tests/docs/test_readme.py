"""The README's first screen (everything above "## Commands") answers a new user's five questions of issue 42,
each there or one link away: an existing cluster (provision: false, docs/runtimes.md), a faulted cluster in the application's own pytest
(docs/api.md), what an acks=1 loss reads as (PASS (expected) · INVALID) and how to try other producer settings,
which commands need sudo, and what `make test` costs and needs."""

from __future__ import annotations

from tests.conftest import REPO

SCREEN_LINES = 45


def first_screen() -> list[str]:
    lines = (REPO / "README.md").read_text().splitlines()
    return lines[:lines.index("## Commands")]


def test_the_first_screen_fits_a_screen() -> None:
    assert len(first_screen()) <= SCREEN_LINES


def test_the_first_screen_answers_the_five_questions() -> None:
    screen = "\n".join(first_screen())
    for answer in (
        "Your own, already running cluster?** Over SSH, with `provision: false`",  # an existing cluster
        "(docs/runtimes.md#testing-a-cluster-you-already-run)",  # ... one link away
        "[docs/api.md](docs/api.md)",  # the application's own pytest, with Docker
        "PASS (expected) · INVALID: lost",  # an expected loss reads as a loss
        "--set 'workloads.producers[0].settings.acks=",  # other producer settings without copying the spec
        "sudo .venv/bin/python -m harness run",  # sudo where it is needed
        "sudo make test` is lint and every test",  # what make test covers, costs and needs
        "minutes on 2 cores",
    ):
        assert answer in screen, answer

"""report.html as a person sees it: headless Chromium, offline, a screenshot, no console errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from PIL import Image

from report.browser import find_chromium, view_page
from tests.report.test_html import MAX_PAGE_BYTES

pytestmark = pytest.mark.browser

# The first series colour: az1 in the timeline and latency plots, broker 0 in leadership and ISR.
AZ1_BLUE = (0x25, 0x63, 0xEB)
AZ3_GREEN = (0x05, 0x96, 0x69)
INVALID_RED = (0xB9, 0x1C, 0x1C)


def count_near(pixels: NDArray[np.int16], color: tuple[int, int, int], tolerance: int = 24) -> int:
    """How many pixels (rows of RGB) are within ``tolerance`` of ``color`` in every channel."""
    return int((np.abs(pixels - np.array(color)) <= tolerance).all(axis=-1).sum())


def test_report_renders_offline_without_console_errors(
    built_run: Path, report_html: str, tmp_path: Path
) -> None:
    find_chromium()  # fails, naming the package, where Chromium is missing: CI must have it
    shot = tmp_path / "report.png"
    view = view_page(built_run / "report.html", shot, width=1400, height=900)
    assert view.errors == [], view.errors
    assert [level for level, _ in view.console if level in ("error", "warning")] == [], view.console
    assert all(url.startswith(("file://", "data:", "about:")) for url in view.requests), view.requests
    assert (built_run / "report.html").stat().st_size <= MAX_PAGE_BYTES
    assert sorted(p.id for p in view.plots) == ["plot-isr", "plot-latency", "plot-leadership", "plot-timeline"]
    image = Image.open(shot).convert("RGB")
    assert image.size == (1400, view.page_height) and view.page_height > 2000
    screen = np.asarray(image, dtype=np.int16)
    for plot in view.plots:
        assert plot.drawn > 5 and plot.width > 1000 and plot.height > 300, plot
        area = screen[
            int(plot.y) : int(plot.y + plot.height), int(plot.x) : int(plot.x + plot.width)
        ].reshape(-1, 3)
        inked = int((area.min(axis=1) < 235).sum())
        assert inked / len(area) > 0.05, f"{plot.id} looks blank: {inked} of {len(area)} pixels inked"
        assert len(np.unique(area, axis=0)) > 50, f"{plot.id} has too few colours to be a plot"
        # az1 / broker 0 in blue; in the latency plot the AZs' lines coincide and az3's (green) is drawn last.
        drawn = sum(count_near(area, color) for color in (AZ1_BLUE, AZ3_GREEN))
        assert drawn > 200, f"{plot.id}: no series drawn"
    header = screen[:100].reshape(-1, 3)
    assert count_near(header, INVALID_RED) > 500, "the INVALID badge is not visible"


def test_console_errors_and_requests_are_caught(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text(
        "<!DOCTYPE html><html><body><p>broken</p>"
        "<img src='http://127.0.0.1:9/never.png'>"
        "<script>console.error('boom'); undefinedFunction();</script></body></html>"
    )
    view = view_page(page, tmp_path / "broken.png")
    assert "boom" in view.errors
    assert any("undefinedFunction" in e for e in view.errors)
    assert "http://127.0.0.1:9/never.png" in view.requests
    assert view.plots == []


def test_the_transactions_view_renders(run_copy: Path, tmp_path: Path) -> None:
    from report import render_report
    from tests.report.test_transactions_view import _make_transactional

    _make_transactional(run_copy)
    render_report(run_copy)
    shot = tmp_path / "txn.png"
    view = view_page(run_copy / "report.html", shot, width=1400, height=900)
    assert view.errors == [] and [lvl for lvl, _ in view.console if lvl in ("error", "warning")] == [], view.console
    plots = {p.id: p for p in view.plots}
    assert {"plot-transactions", "plot-lso"} <= set(plots)
    screen = np.asarray(Image.open(shot).convert("RGB"), dtype=np.int16)
    for name in ("plot-transactions", "plot-lso"):
        plot = plots[name]
        assert plot.drawn > 1 and plot.width > 1000 and plot.height > 200, plot
        area = screen[int(plot.y): int(plot.y + plot.height), int(plot.x): int(plot.x + plot.width)].reshape(-1, 3)
        assert count_near(area, AZ3_GREEN) > 100 if name == "plot-transactions" else count_near(area, AZ1_BLUE) > 100

"""report.html: one self-contained page per run (plotly.js inline, no network), the same bytes every time.

The plotly.js inlined is plotly's own "basic" partial bundle (scatter, bar and pie
traces: all the report draws), vendored from npm's plotly.js-basic-dist-min at the
version the plotly Python package ships (a test keeps the two in step), about a
quarter of the full bundle's size.
Must never: load anything from the network, or depend on the clock or randomness.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

import jinja2
from markupsafe import Markup

from report.files import write_atomically
from report.loaded_run import load_run
from report.page import build_context, plot_config
from testbed.runfolder import RunFolder

_TEMPLATES = resources.files("report") / "templates"
PLOTLY_BUNDLE = "plotly-basic.min.js"


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: (_TEMPLATES / name).read_text(encoding="utf-8")),
        autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
    )
    env.filters["dotbreak"] = _dotbreak
    return env


@cache
def plotly_js() -> str:
    """The vendored plotly.js basic bundle, as inlined in every page."""
    return (_TEMPLATES / PLOTLY_BUNDLE).read_text(encoding="utf-8")


def _dotbreak(text: str) -> Markup:
    """"max.in.flight" with a line-break opportunity after each dot, for narrow table headers."""
    return Markup(".<wbr>").join(Markup.escape(part) for part in str(text).split("."))


def report_html(run_dir: str | Path) -> str:
    """The page for the run in ``run_dir``, as text."""
    env = _environment()
    context = build_context(load_run(run_dir))
    css = (_TEMPLATES / "report.css").read_text(encoding="utf-8")
    return env.get_template("report.html.j2").render(
        **context, css=Markup(css), plotly_js=Markup(plotly_js()),
        config=plot_config(),
    )


def render_report(run_dir: str | Path) -> Path:
    """Write ``run_dir/report.html`` and return its path. ReportError if ``run_dir`` is not a folder."""
    root = Path(run_dir)
    return write_atomically(RunFolder(root).report, report_html(root))

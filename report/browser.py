"""Open a page in headless Chromium and say what a person would see: a screenshot and the console.

Drives Debian's ``chromium`` over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: JSON messages ending in NUL on fds 3 and 4),
so it needs no port, no websocket library and no network. It records console
messages, uncaught exceptions, browser log entries and every URL the page
asked for, waits until each plotly plot has drawn, measures the plots and
takes a full-page PNG. Used by the report's tests and to take the report's
screenshot in docs/reading-results.md; it starts one browser and always ends it.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from report.errors import ReportError

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
# The flags that keep Chromium offline and quiet, headless and as root.
OFFLINE_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
    "--remote-debugging-pipe",
)
PLOTS_DRAWN = """(() => {
  const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
  return JSON.stringify({
    expected: document.querySelectorAll('script[data-plot]').length,
    plots: plots.map(p => {
      const r = p.getBoundingClientRect();
      return {id: p.id, x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height,
              traces: p.querySelectorAll('.trace, .bars .point, .scatterlayer path').length};
    }),
    height: document.documentElement.scrollHeight,
  });
})()"""


@dataclass(frozen=True)
class PlotBox:
    """Where a plot sits on the page (CSS pixels) and how many drawn elements it holds."""

    id: str
    x: float
    y: float
    width: float
    height: float
    drawn: int


@dataclass
class PageView:
    """What loading a page showed: console and log messages, requests, plots, the screenshot."""

    screenshot: Path
    console: list[tuple[str, str]] = field(default_factory=list)  # (level, text)
    exceptions: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    plots: list[PlotBox] = field(default_factory=list)
    page_height: int = 0

    @property
    def errors(self) -> list[str]:
        """Console errors and uncaught exceptions, the things a page must not have."""
        return [text for level, text in self.console if level == "error"] + self.exceptions


def find_chromium() -> str:
    """The Chromium binary; ReportError naming the Debian package when there is none."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise ReportError("no Chromium found: install Debian's 'chromium' package (make setup does)")


class _Pipe:
    """The DevTools protocol over Chromium's pipe: send a command, read until its answer."""

    def __init__(self, proc: subprocess.Popen[bytes], to_browser: int, from_browser: int) -> None:
        self.proc, self.out, self.inp = proc, to_browser, from_browser
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = 30) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise ReportError(f"chromium: {method} failed: {reply['error'].get('message')}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def pump(self, seconds: float) -> None:
        """Collect events for a while."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._read(deadline))
        except TimeoutError:
            return

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self.inp], [], [], left)
            if ready:
                chunk = os.read(self.inp, 1 << 20)
                if not chunk:
                    raise ReportError(f"chromium closed its pipe (exit status {self.proc.poll()})")
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        loaded: dict[str, Any] = json.loads(message)
        return loaded


def _launch(binary: str, profile: str, width: int, height: int) -> tuple[subprocess.Popen[bytes], _Pipe]:
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    # Chromium reads commands on fd 3 and answers on fd 4. Park its ends above 9 so that moving them to
    # 3 and 4 in the child cannot overwrite one with the other.
    child_in = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD_CLOEXEC, 10)
    child_out = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(to_browser_r)
    os.close(from_browser_w)

    def wire() -> None:
        os.dup2(child_in, 3)
        os.dup2(child_out, 4)

    args = [binary, *OFFLINE_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"]
    try:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                preexec_fn=wire, pass_fds=(3, 4, child_in, child_out))
    except OSError as exc:
        os.close(to_browser_w)
        os.close(from_browser_r)
        raise ReportError(f"cannot start {binary}: {exc}") from exc
    finally:
        os.close(child_in)
        os.close(child_out)
    return proc, _Pipe(proc, to_browser_w, from_browser_r)


def _record(view: PageView, events: list[dict[str, Any]]) -> None:
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            view.console.append(("error" if params.get("type") in ("error", "assert") else str(params.get("type")),
                                 text))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            view.exceptions.append(str(details.get("exception", {}).get("description") or details.get("text")))
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            view.console.append((str(entry.get("level")), f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}"))
        elif method == "Network.requestWillBeSent":
            view.requests.append(str(params.get("request", {}).get("url")))


def _wait_for_plots(pipe: _Pipe, session: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        result = pipe.send("Runtime.evaluate", {"expression": PLOTS_DRAWN, "returnByValue": True}, session)
        state: dict[str, Any] = json.loads(result["result"]["value"])
        drawn = [p for p in state["plots"] if p["traces"] > 0]
        if len(drawn) >= state["expected"] or time.monotonic() > deadline:
            return state
        pipe.pump(0.2)


def view_page(page: Path, screenshot: Path, width: int = 1400, height: int = 900, timeout: float = 60) -> PageView:
    """Load ``page`` (a file) in headless Chromium, wait for its plots, write a full-page PNG to ``screenshot``."""
    binary = find_chromium()
    view = PageView(screenshot)
    with tempfile.TemporaryDirectory(prefix="faultline-chromium-") as profile:
        proc, pipe = _launch(binary, profile, width, height)
        try:
            target = pipe.send("Target.createTarget", {"url": "about:blank"}, timeout=timeout)["targetId"]
            session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Runtime", "Log", "Network", "Page"):
                pipe.send(f"{domain}.enable", session=session)
            pipe.send("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
            pipe.send("Page.navigate", {"url": page.resolve().as_uri()}, session, timeout=timeout)
            _wait_for_event(pipe, "Page.loadEventFired", timeout)
            state = _wait_for_plots(pipe, session, timeout)
            pipe.pump(0.5)  # late console messages
            view.plots = [PlotBox(p["id"], p["x"], p["y"], p["width"], p["height"], p["traces"]) for p in state["plots"]]
            view.page_height = int(state["height"])
            shot = pipe.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                        "clip": {"x": 0, "y": 0, "width": width,
                                                                 "height": view.page_height, "scale": 1}},
                             session, timeout=timeout)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
            _record(view, pipe.events)
        finally:
            _close(proc, pipe)
    return view


def _wait_for_event(pipe: _Pipe, method: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not any(e.get("method") == method for e in pipe.events):
        if time.monotonic() > deadline:
            raise ReportError(f"chromium: no {method} within {timeout:.0f} s")
        pipe.pump(0.1)


def _close(proc: subprocess.Popen[bytes], pipe: _Pipe) -> None:
    with contextlib.suppress(ReportError, TimeoutError, OSError):
        pipe.send("Browser.close", timeout=5)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    finally:
        os.close(pipe.out)
        os.close(pipe.inp)

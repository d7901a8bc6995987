"""The demo's ``report.html`` and the documentation site, opened in a real (headless) Chromium.

Each page is loaded through the DevTools protocol (a websocket to ``--remote-debugging-port`` on
127.0.0.1), screenshotted at desktop and phone width, and checked for: no JavaScript exception, no
``console.error``, no failed load of a local resource, no broken image, and (for the report) the
check table with one row per check and no horizontal overflow at phone width. The docs' formulas are
typeset by the MathJax copy the site serves itself: a theory API page and the teaching page are
loaded with the browser's network switched off and must show typeset math and no raw TeX; the
report itself must request nothing at all but ``data:`` URIs.

The browser is ``/usr/bin/chromium`` (Debian package ``chromium``; CI installs it) or the first of
``chromium``, ``chromium-browser``, ``google-chrome`` on ``PATH``; without one the tests skip, saying
so. The docs are taken from ``docs/_build/html`` when built (CI builds them before the tests), or
``$ALGOS_DOCS_HTML``; otherwise they are built here without running the gallery (about a minute).
Screenshots go to ``$ALGOS_SCREENSHOT_DIR`` when set (kept), else to the test's temporary folder.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
    "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
]
START_TIMEOUT_S = 30    # browser start-up, generous for a loaded 2-core CI machine
LOAD_TIMEOUT_S = 60     # one page load (the report is a few MB of data URIs)
DEMO_TIMEOUT_S = 300    # `algos demo --quick --modules continual` (numba compiles on a first run)
DOCS_TIMEOUT_S = 600    # a docs build without the gallery
PHONE = dict(width=390, height=844, deviceScaleFactor=2, mobile=True)
DESKTOP = dict(width=1280, height=900, deviceScaleFactor=1, mobile=False)


def _find_browser():
    candidates = [os.environ.get("ALGOS_CHROMIUM", ""), "/usr/bin/chromium"]
    candidates += [shutil.which(n) or "" for n in ("chromium", "chromium-browser", "google-chrome")]
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    return None


BROWSER = _find_browser()
pytestmark = pytest.mark.skipif(
    BROWSER is None,
    reason="no Chromium found (/usr/bin/chromium or chromium/chromium-browser/google-chrome on PATH); "
           "install it with `apt-get install -y chromium`",
)


class Browser:
    """A headless Chromium and a minimal DevTools-protocol client (one page target)."""

    def __init__(self, path):
        from websockets.sync.client import connect

        self.profile = tempfile.mkdtemp(prefix="algos-chromium-")
        self.proc = subprocess.Popen(
            [path, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (port_file.is_file() and len(port_file.read_text().split()) >= 2):
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace")[-2000:]
                self.close()
                raise RuntimeError(f"Chromium exited with status {self.proc.returncode}:\n{err}")
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"Chromium did not open its DevTools port within {START_TIMEOUT_S} s")
            time.sleep(0.1)
        port, ws_path = port_file.read_text().split()[:2]
        self._conn = connect(f"ws://127.0.0.1:{port}{ws_path}", max_size=None, open_timeout=START_TIMEOUT_S)
        self.ws = self._conn.__enter__()
        self._ids = itertools.count(1)
        self.events = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    def call(self, method, session=False, timeout=LOAD_TIMEOUT_S, **params):
        msg_id = next(self._ids)
        msg = {"id": msg_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer to {method} within {timeout} s")
            reply = json.loads(self.ws.recv(timeout=left))
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method, timeout=LOAD_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        for i, ev in enumerate(self.events):
            if ev["method"] == method:
                return self.events.pop(i)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {method} within {timeout} s")
            ev = json.loads(self.ws.recv(timeout=left))
            if "method" in ev:
                if ev["method"] == method:
                    return ev
                self.events.append(ev)

    def evaluate(self, expression):
        res = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                        awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"evaluating {expression[:60]!r}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def open(self, url, viewport=DESKTOP):
        """Load ``url`` at ``viewport``; return the problems seen while loading it."""
        self.call("Emulation.setDeviceMetricsOverride", session=True, **viewport)
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self.wait_event("Page.loadEventFired")
        # make every image load now (lazy ones included), then wait for them
        self.evaluate("Promise.all(Array.from(document.images).map(i => { i.loading = 'eager'; "
                      "return i.decode().catch(() => null); }))")
        time.sleep(0.3)  # late console messages
        self.call("Runtime.evaluate", session=True, expression="0")  # drain pending events
        return self.problems()

    def problems(self):
        requests, errors, remote = {}, [], []
        for ev in self.events:
            m, p = ev["method"], ev.get("params", {})
            if m == "Network.requestWillBeSent":
                requests[p["requestId"]] = p["request"]["url"]
            elif m == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                errors.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append("console.error: " + " ".join(str(a.get("value", a.get("description", "")))
                                                           for a in p.get("args", [])))
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                url = p["entry"].get("url", "")
                if p["entry"].get("source") == "network" and url.startswith(("http://", "https://")):
                    remote.append(url)
                else:
                    errors.append(f"log ({p['entry'].get('source')}): {p['entry'].get('text')} {url}")
            elif m == "Network.loadingFailed":
                url = requests.get(p["requestId"], "?")
                if url.startswith(("http://", "https://")):
                    remote.append(url)
                elif not p.get("canceled"):
                    errors.append(f"failed to load {url}: {p.get('errorText')}")
        return {"errors": errors, "remote_failures": remote, "requests": list(requests.values())}

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", session=True, format="png", captureBeyondViewport=False)["data"]
        png = base64.b64decode(data)
        Path(path).write_bytes(png)
        return png

    def broken_images(self):
        return self.evaluate("Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0))"
                             ".map(i => (i.currentSrc || i.src).slice(0, 120))")

    def close(self):
        try:
            if getattr(self, "_conn", None) is not None:
                self._conn.__exit__(None, None, None)
        except Exception:
            pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    b = Browser(BROWSER)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    d = os.environ.get("ALGOS_SCREENSHOT_DIR")
    if d:
        Path(d).mkdir(parents=True, exist_ok=True)
        return Path(d)
    return tmp_path_factory.mktemp("screenshots")


def _assert_png(png, what):
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000, f"screenshot of {what} is not a PNG image"


# --------------------------------------------------------------------------------------------------
# report.html


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory):
    """``report.html`` written by ``algos demo --quick`` on one real module (the fastest)."""
    out = tmp_path_factory.mktemp("demo")
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from algos.cli import main; sys.exit(main())", "demo", "--quick",
         "--modules", "continual", "--out", str(out), "--json"],
        capture_output=True, text=True, timeout=DEMO_TIMEOUT_S, env=env, cwd=out,
    )
    assert proc.returncode in (0, 1), f"algos demo failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    summary = json.loads(proc.stdout)
    n_checks = sum(len(s["checks"]) for s in summary["sections"])
    assert (out / "report.html").is_file(), "algos demo did not write report.html"
    return out / "report.html", n_checks


@pytest.fixture(scope="module")
def synthetic_report(tmp_path_factory):
    """A report with every status (pass, fail, vacuous, n/a tightness, a failed section) and a figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from algos._report import Check, DemoSection, write_report

    out = tmp_path_factory.mktemp("synthetic")
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    fig.savefig(out / "line.png", dpi=60)
    plt.close(fig)
    secs = [
        DemoSection("alpha", "Alpha (with | pipes, commas)",
                    body="Text with `code`.\n\n| a | b |\n|---|---|\n| 1 | 2 |",
                    checks=[Check("T1 |x| <= 1", 0.5, 1.0, relation="<="),
                            Check("vacuous", 0.2, 3.0, relation="<=", trivial=1.0),
                            Check("a target", 0.4, 0.5, kind="target"),
                            Check("nan", float("nan"), 1.0, kind="sanity")],
                    figures=["line.png"], seconds=1.0),
        DemoSection("beta", "beta (section failed)", error="ValueError: boom"),
    ]
    write_report(secs, out, command="algos demo --quick")
    return out / "report.html", sum(len(s.checks) for s in secs)


@pytest.mark.parametrize("which", ["demo", "synthetic"])
def test_report_html_in_browser(which, browser, shots, request):
    path, n_checks = request.getfixturevalue(f"{which}_report")
    url = path.resolve().as_uri()
    probs = browser.open(url, DESKTOP)
    _assert_png(browser.screenshot(shots / f"report_{which}_desktop.png"), "report.html")
    assert probs["errors"] == [], probs["errors"]
    assert probs["remote_failures"] == []
    # self-contained: the page itself is the only request (figures are data: URIs)
    assert [u for u in probs["requests"] if not u.startswith(("data:", "file:"))] == []
    assert browser.broken_images() == []
    n_img = browser.evaluate("document.images.length")
    assert n_img >= 1, "the report shows no figure"
    rows = browser.evaluate("document.querySelectorAll('#check-summary tbody tr.check-row').length")
    assert rows == n_checks, f"check table has {rows} rows for {n_checks} checks"
    cells = browser.evaluate("Array.from(document.querySelectorAll('#check-summary tbody tr'))"
                             ".map(r => r.cells.length)")
    assert set(cells) == {7}, cells
    # phone width: no horizontal scrolling of the page, tables shown as cards
    probs = browser.open(url, PHONE)
    _assert_png(browser.screenshot(shots / f"report_{which}_phone.png"), "report.html (phone)")
    assert probs["errors"] == [], probs["errors"]
    overflow = browser.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"report.html is {overflow} px wider than a {PHONE['width']} px phone screen"
    assert browser.evaluate("getComputedStyle(document.querySelector('#check-summary thead')).display") == "none"


# --------------------------------------------------------------------------------------------------
# the documentation site


@pytest.fixture(scope="module")
def docs_html(tmp_path_factory):
    for cand in (os.environ.get("ALGOS_DOCS_HTML"), REPO_ROOT / "docs" / "_build" / "html"):
        if cand and (Path(cand) / "index.html").is_file():
            return Path(cand)
    pytest.importorskip("sphinx", reason="the docs extra is not installed and no built site was found")
    out = tmp_path_factory.mktemp("docs_html")
    env = dict(os.environ, ALGOS_DOCS_PLOT_GALLERY="0", MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", "-d", str(out / ".doctrees"),
                           str(REPO_ROOT / "docs"), str(out)],
                          capture_output=True, text=True, timeout=DOCS_TIMEOUT_S, env=env)
    assert proc.returncode == 0, f"docs build failed:\n{proc.stderr[-3000:]}"
    return out


def _api_page(docs):
    page = docs / "api" / "generated" / "theory.fair_matching.usw_lower_bound.html"
    assert page.is_file(), f"API page {page} was not built"
    return page


@pytest.mark.parametrize("page", ["index", "api"])
def test_docs_pages_in_browser(page, docs_html, browser, shots):
    path = docs_html / "index.html" if page == "index" else _api_page(docs_html)
    probs = browser.open(path.resolve().as_uri(), DESKTOP)
    _assert_png(browser.screenshot(shots / f"docs_{page}.png"), path.name)
    assert probs["errors"] == [], probs["errors"]
    assert browser.broken_images() == []
    title = browser.evaluate("document.title")
    assert "algos" in title
    # layout at 1280 px: an article column of at least 700 px, a title that fits its column, no
    # horizontal scrolling of the page (wide tables and code scroll inside themselves)
    width = browser.evaluate("document.querySelector('.bd-article').getBoundingClientRect().width")
    assert width >= 700, f"the article column is {width:.0f} px wide at {DESKTOP['width']} px"
    h1 = browser.evaluate("(() => { const h = document.querySelector('.bd-article h1'); "
                          "return h.scrollWidth - h.clientWidth; })()")
    assert h1 <= 1, f"the page title overflows its column by {h1} px"
    overflow = browser.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"the page is {overflow} px wider than the window"
    if page == "api":
        text = browser.evaluate("document.body.innerText")
        assert "Bound kind" in text and "exact" in text, "theory page does not show its BOUND_KIND"
        assert "usw_lower_bound" in text
    else:
        links = browser.evaluate("Array.from(document.querySelectorAll('a')).map(a => a.getAttribute('href'))")
        for target in ("fair_matching.html", "api/index.html", "auto_examples/index.html"):
            assert any(h and h.endswith(target) for h in links), f"index has no link to {target}"


_MATH_PAGES = {
    "theory API page": ("api", "generated", "theory.fair_matching.usw_lower_bound.html"),
    "teaching page": ("teaching", "theorems_as_code.html"),
}
_MATH_WAIT_JS = (
    "(window.MathJax && MathJax.startup && MathJax.startup.promise) ? "
    "MathJax.startup.promise.then(() => document.querySelectorAll('mjx-container').length) : -1"
)


@pytest.mark.parametrize("which", sorted(_MATH_PAGES))
def test_docs_math_renders_offline(which, docs_html, browser, shots):
    """With the browser's network switched off, the formulas of a theory API page and of the teaching
    page are typeset by the MathJax copy served from the site: MathJax loads, typesets at least one
    formula, no TeX delimiter is left in the rendered text and nothing remote is requested."""
    path = docs_html.joinpath(*_MATH_PAGES[which])
    assert path.is_file(), f"{path} was not built"
    assert (docs_html / "_static" / "mathjax" / "tex-chtml.js").is_file(), "MathJax is not served by the site"
    browser.call("Network.emulateNetworkConditions", session=True, offline=True, latency=0,
                 downloadThroughput=-1, uploadThroughput=-1)
    try:
        probs = browser.open(path.resolve().as_uri(), DESKTOP)
        n_math = browser.evaluate(_MATH_WAIT_JS)
        text = browser.evaluate("document.querySelector('main, article, body').innerText")
        _assert_png(browser.screenshot(shots / f"docs_math_{which.replace(' ', '_')}.png"), path.name)
    finally:
        browser.call("Network.emulateNetworkConditions", session=True, offline=False, latency=0,
                     downloadThroughput=-1, uploadThroughput=-1)
    assert n_math != -1, "MathJax did not load (offline)"
    assert n_math >= 1, "MathJax loaded but typeset no formula"
    remote = [u for u in probs["requests"] if u.startswith(("http://", "https://"))]
    assert remote == [], f"the page requests remote resources: {remote[:5]}"
    for delim in ("\\(", "\\)", "\\[", "\\]", "$$"):
        assert delim not in text, f"raw TeX delimiter {delim!r} left in the rendered text of the {which}"
    assert probs["errors"] == [], probs["errors"]

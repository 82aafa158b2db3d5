"""Fixtures for the browser tests: Chromium, a private JupyterLab server, a page per test.

* ``chromium`` -- the path of a Chromium binary.  Debian's ``chromium`` package is installed
  with apt-get when none is found and this runs as root; otherwise the tests skip, saying
  why, except under CI (``CI`` set), where a missing browser is a failure, not a skip.
* ``lab`` -- ``jupyter lab`` started from this interpreter on 127.0.0.1 (a free port, a
  random token, fresh config/data/runtime/settings/workspace folders, no news or update
  checks, autosave off so that running the notebooks never rewrites them), stopped by
  killing its process group when the tests are done, whether they passed or not.
* ``browser`` -- headless Chromium through Playwright (Playwright's own browser download
  is not needed: ``executable_path`` points at the system Chromium).
* ``page`` -- a fresh browser context (1200x900) that records console errors and uncaught
  page errors in ``page.qrlab_errors``.

The server's log and the screenshots go to ``artifacts/browser/`` (git-ignored).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "browser"
VIEWPORT = {"width": 1200, "height": 900}

# Flags that work for headless Chromium on a machine whose only network is the package
# registries: without the background-networking ones Chromium keeps trying Google's hosts.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# JupyterLab plugins that would fetch news or extension lists from the internet.
DISABLED_LAB_PLUGINS = (
    "@jupyterlab/apputils-extension:announcements",
    "@jupyterlab/extensionmanager-extension:plugin",
)
# User settings of the private server: no autosave (the notebooks in the repository must
# not be rewritten by running them here) and every cell in the DOM (no windowing), so that
# the page can be read whole.
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str):
    """Skip (on a developer's machine) or fail (under CI) because something is missing."""
    if in_ci():
        pytest.fail(f"browser test cannot run under CI: {reason}", pytrace=False)
    pytest.skip(reason)


# ------------------------------------------------------------------------------------
# Chromium
# ------------------------------------------------------------------------------------
def find_chromium() -> str | None:
    if os.environ.get("QRLAB_CHROMIUM"):
        chosen = os.environ["QRLAB_CHROMIUM"]
        if not Path(chosen).is_file():
            unavailable(f"QRLAB_CHROMIUM={chosen} is not a file")
        return chosen
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def install_chromium() -> str | None:
    """Install Debian's chromium package; None if done, else why it could not be."""
    apt = shutil.which("apt-get")
    if apt is None:
        return "no Chromium found and no apt-get to install it (set QRLAB_CHROMIUM to a binary)"
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return ("no Chromium found; install it as root (sudo apt-get install chromium) or set "
                "QRLAB_CHROMIUM to a Chromium/Chrome binary")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    log = ARTIFACTS / "apt-get.log"
    print("\n==> installing Debian's chromium for the browser test (apt-get; once)", flush=True)
    with open(log, "w") as out:
        for cmd in ([apt, "update"],
                    [apt, "install", "-y", "--no-install-recommends", "chromium"]):
            out.write(f"$ {' '.join(cmd)}\n")
            out.flush()
            code = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                   stdin=subprocess.DEVNULL)
            if code != 0:
                tail = log.read_text(errors="replace")[-2000:]
                return f"{' '.join(cmd)} failed with exit status {code}:\n{tail}"
    return None


def ensure_chromium() -> str:
    """A Chromium binary, installed if need be; skips (fails under CI) if there is none."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = find_chromium()
    if path is None:
        problem = install_chromium()
        if problem:
            unavailable(problem)
        path = find_chromium()
        if path is None:
            unavailable("apt-get installed chromium but no Chromium binary was found")
    return path


@pytest.fixture(scope="session")
def chromium() -> str:
    return ensure_chromium()


# ------------------------------------------------------------------------------------
# JupyterLab
# ------------------------------------------------------------------------------------
class Lab:
    """A running ``jupyter lab``: ``url`` (no trailing slash), ``token``, ``proc``."""

    def __init__(self, proc, url, token, log):
        self.proc, self.url, self.token, self.log = proc, url, token, log

    def api(self, method: str, path: str):
        req = urllib.request.Request(f"{self.url}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self):
        """End every session (and so its kernel): one notebook's kernel at a time."""
        for session in self.api("GET", "/api/sessions"):
            self.api("DELETE", f"/api/sessions/{session['id']}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def private_jupyter_dirs(base: Path) -> dict[str, str]:
    """Fresh Jupyter folders under ``base``: nothing from the user's own set-up leaks in."""
    dirs = {name: base / name for name in
            ("config", "data", "runtime", "settings", "workspaces", "ipython", "checkpoints")}
    for d in dirs.values():
        d.mkdir(parents=True)
    labconfig = dirs["config"] / "labconfig"
    labconfig.mkdir()
    (labconfig / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {name: True for name in DISABLED_LAB_PLUGINS}}))
    for rel, values in LAB_SETTINGS.items():
        target = dirs["settings"] / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    return {k: str(v) for k, v in dirs.items()}


def start_lab(base: Path, log_path: Path, root: Path = ROOT,
              wait_s: float = 90.0) -> Lab | None:
    """Start JupyterLab on ``root``; the running server, or None if it did not answer."""
    dirs = private_jupyter_dirs(base)
    port, token = free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": dirs["config"], "JUPYTER_DATA_DIR": dirs["data"],
        "JUPYTER_RUNTIME_DIR": dirs["runtime"], "JUPYTERLAB_SETTINGS_DIR": dirs["settings"],
        "JUPYTERLAB_WORKSPACES_DIR": dirs["workspaces"], "IPYTHONDIR": dirs["ipython"],
        "JUPYTER_PLATFORM_DIRS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        # no news feed, no update check, nothing else that would go to the internet
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.expose_app_in_browser=True",
        # checkpoints (written on save only) stay out of the repository
        f"--FileCheckpoints.checkpoint_dir={dirs['checkpoints']}",
    ]
    log = open(log_path, "a")
    log.write(f"$ {' '.join(cmd).replace(token, '<token>')}\n")
    log.flush()
    # its own process group, so that the kernels it starts are stopped with it
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    log.close()
    lab = Lab(proc, f"http://127.0.0.1:{port}", token, log_path)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return None
        try:
            lab.api("GET", "/api/status")
            return lab
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.5)
    stop_lab(proc)
    return None


def stop_lab(proc: subprocess.Popen) -> None:
    """Stop the server and its kernels: SIGTERM to its process group, then SIGKILL."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)     # kernels left behind, if any
    except ProcessLookupError:
        pass
    proc.wait()


@pytest.fixture(scope="module")
def lab(chromium, tmp_path_factory):
    # chromium first: without a browser there is no point starting a server
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        unavailable("JupyterLab is not installed (qrlab's lab extra: pip install -e '.[dev]')")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # On a fresh machine matplotlib builds its font cache on first import and, when that
    # takes long, says so on stderr, which would be a notebook cell's stderr: build it now.
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], cwd=ROOT,
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=600)
    log_path = ARTIFACTS / "jupyterlab.log"
    log_path.write_text("")
    server = None
    for attempt in (1, 2):          # retried once, only when the server did not come up
        server = start_lab(tmp_path_factory.mktemp(f"jupyter{attempt}"), log_path)
        if server is not None:
            break
    if server is None:
        tail = log_path.read_text(errors="replace")[-3000:]
        pytest.fail(f"JupyterLab did not start (twice); its log ({log_path}):\n{tail}",
                    pytrace=False)
    try:
        yield server
    finally:
        stop_lab(server.proc)


# ------------------------------------------------------------------------------------
# the browser
# ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser(chromium):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed (it is in qrlab's test extra: "
                    "pip install -e '.[dev]')")
    with sync_playwright() as pw:
        # launch() gives Chromium a new, empty --user-data-dir of its own every time
        b = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def artifacts() -> Path:
    """Where screenshots go: artifacts/browser/ at the repository root (git-ignored)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture
def page(browser, lab):
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(f"console.{msg.type}: {msg.text}")
            if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    page.qrlab_errors = errors
    try:
        yield page
    finally:
        context.close()
        lab.shutdown_kernels()

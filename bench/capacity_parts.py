"""Parts of bench_crowd_capacity: the databases, the nginx proxy, browser probes, CPU.

Kept apart from the script so each piece stays small and the nginx configuration that
docs/scale.md shows is the one the bench runs.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ENGINES = ("sqlite", "postgresql")

NGINX_CONF = """\
# Concord behind nginx: several Streamlit processes on one host, one SQLite file.
# Sticky sessions by a cookie nginx sets itself (open-source nginx has no 'sticky'):
# a browser keeps its backend for the websocket and for /media (images live in the
# memory of the process that holds the session).
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}
  map $cookie_concord_route $concord_route {{ "" $request_id; default $cookie_concord_route; }}
  upstream concord {{
    hash $concord_route consistent;
{servers}
  }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://concord;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_read_timeout 1d;
      proxy_buffering off;
      add_header Set-Cookie "concord_route=$concord_route; Path=/; HttpOnly; SameSite=Lax" always;
    }}
  }}
}}
"""


class Databases:
    """The bench's database per engine: a SQLite file in ``tmp``, or a database on a
    throw-away PostgreSQL server (tests/support/pg_server.py, Unix socket, fsync on) that
    is stopped, with this host's files for it (media cache, address file), on exit."""

    NAME = f"concord_capacity_{os.getpid()}"

    def __init__(self, tmp: Path, engines: list[str]) -> None:
        self.tmp, self.engines, self.server, self.url = tmp, engines, None, None

    def __enter__(self) -> Databases:
        if "postgresql" in self.engines:
            from tests.support.pg_server import PgServer

            self.server = PgServer().start()
            self.url = self.server.create_database(self.NAME)
        return self

    def target(self, engine: str) -> Path | str:
        """What CONCORD_DB / open_db take for ``engine``."""
        return self.url if engine == "postgresql" else self.tmp / "cap.db"

    def describe(self, engine: str) -> str:
        if engine == "sqlite":
            return "SQLite file on the temporary folder's disk"
        done = subprocess.run([str(self.server.bindir / "postgres"), "--version"],
                              capture_output=True, text=True, check=False)
        return f"{done.stdout.strip()} on a Unix socket, same host, fsync on"

    def __exit__(self, *exc: object) -> None:
        if self.server is None:
            return
        from concord.config import local_stem
        from concord.store import pg

        pg.close_pool(self.url)
        self.server.stop()
        stem = local_stem(self.url)  # the app processes' files beside the database
        for path in stem.parent.glob(stem.name + ".*"):
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()


def free_port() -> int:
    """A TCP port nobody listens on (on loopback)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 90) -> None:
    """Wait until ``url`` answers 200 (or fail if ``proc`` died)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer in time")


def nginx_conf(tmp: Path, port: int, backends: list[int]) -> str:
    """The proxy configuration for ``backends`` (Streamlit ports), listening on ``port``."""
    servers = "\n".join(f"    server 127.0.0.1:{p};" for p in backends)
    return NGINX_CONF.format(tmp=tmp, port=port, servers=servers)


def start_nginx(tmp: Path, backends: list[int],
                port: int | None = None) -> tuple[str, subprocess.Popen]:
    """Run nginx in the foreground in front of ``backends`` (on ``port``, default a free
    one; give it when the app processes must know the proxy's address first)."""
    exe = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(exe).exists():
        raise RuntimeError("nginx not found: apt-get install nginx (Debian)")
    tmp.mkdir(parents=True, exist_ok=True)
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (tmp / sub).mkdir(exist_ok=True)
        os.chmod(tmp / sub, 0o777)  # nginx workers drop to an unprivileged user under root
    port = port or free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(nginx_conf(tmp, port, backends), encoding="utf-8")
    proc = subprocess.Popen([exe, "-c", str(conf), "-p", str(tmp), "-g", "daemon off;"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/_stcore/health", proc)
    return url, proc


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all cores since boot (Linux /proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


# Times one submit inside the page: from just before the Enter key to the progress text
# showing the new count (what the rater waits for), with performance.now().
_WATCH_JS = """(n) => {
  window.__lat = null; window.__t0 = null;
  const obs = new MutationObserver(() => {
    const el = document.querySelector('[data-testid="stProgress"]');
    if (window.__t0 !== null && el && el.innerText.startsWith(n + ' / ')) {
      window.__lat = performance.now() - window.__t0; obs.disconnect(); }
  });
  obs.observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


@dataclass
class Probe:
    """One browser context signed in as one rater, submitting with the keyboard."""

    page: object
    done: int = 0
    latencies: list[float] = field(default_factory=list)


def open_probe(browser, url: str, token: str) -> Probe:
    """A fresh context (own cookies: the proxy may route it anywhere) on the rate page."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.goto(f"{url}/?token={token}")
    page.get_by_text(" rated · ").first.wait_for(timeout=60_000)
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached",
                                                             timeout=60_000)
    return Probe(page)


def submit_all(probes: list[Probe], spread: float = 0.0, timeout: float = 30.0) -> None:
    """Every probe submits one rating, the submits ``spread`` seconds apart in all (0: at
    the same moment, a burst); each latency is measured in its own page."""
    for p in probes:
        p.page.evaluate(_WATCH_JS, p.done + 1)
        p.page.keyboard.press("3")
        p.page.keyboard.press("w")
    for p in probes:
        p.page.evaluate("() => { window.__t0 = performance.now(); }")
        p.page.keyboard.press("Enter")
        time.sleep(spread / len(probes))
    for p in probes:
        handle = p.page.wait_for_function("() => window.__lat", timeout=timeout * 1000)
        p.latencies.append(float(handle.json_value()) / 1000.0)
        p.done += 1

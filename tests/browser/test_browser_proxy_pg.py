"""Several hosts on one PostgreSQL database (docs/scale.md, "Several hosts"), as near as one
machine gets: two app processes, each run from its own copy of Concord (its own data
folder: media cache, address file, as a second host has), behind nginx with the
cookie-sticky configuration, one PostgreSQL server, the images at one path both reach
(shared storage). A rater rates through the proxy in headless Chromium; an app process
killed with SIGKILL, and the database server crashing, during submits lose nothing the
page acknowledged."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench import capacity_parts as parts
from concord.config import local_stem
from concord.services import studies
from concord.store import pg
from concord.store.db import open_db
from tests.browser.conftest import start_server, stop
from tests.helpers import ROOT, make_folder_study
from tests.support.pg_server import PgServer, unavailable_reason

pytestmark = [pytest.mark.browser, pytest.mark.postgres]
SECRET = "letmein-test-secret-7Qx9"
# What a host needs to run the app (not the tests, docs or benches).
HOST_FILES = ("app.py", "pages", "concord", "evaluators", ".streamlit", "rubrics")
TOTAL = 8  # images in the study: 4 prompts x 2 models
TRACEBACK = '[data-testid="stException"]'


@dataclass
class Host:
    """One app process and the Concord folder it runs from."""

    root: Path
    url: str
    proc: object

    def media(self, db_url: str) -> list[Path]:
        """The image copies this host's process served (its own media cache)."""
        stem = local_stem(db_url)
        cache = self.root / "data" / (stem.name + ".media")
        return [p for p in cache.rglob("*") if p.is_file()]


@pytest.fixture(scope="module")
def server():
    """A PostgreSQL server of this module's own: the tests crash it."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx not installed (apt-get install nginx)")
    with PgServer() as running:
        yield running


def _host_copy(dest: Path) -> Path:
    for name in HOST_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, dest / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    (dest / "data").mkdir()
    return dest


@pytest.fixture
def cluster(server, tmp_path: Path, request: pytest.FixtureRequest):
    """Two hosts, nginx in front, one rater's token, the database (URL and a connection)."""
    name = f"hosts_{abs(hash(request.node.nodeid)) % 10**9}"
    url = server.create_database(name)
    db = open_db(url)
    # The study's images at one absolute path both hosts read (shared storage / NFS).
    studies.import_manifest(db, make_folder_study(tmp_path / "shared" / "px", prompts=4,
                                                  models=("a", "b"), k=4))
    token = studies.invite(db, "px", ["r0"], "http://unused")[0].url.split("token=")[1]
    proxy_port = parts.free_port()
    env = {"CONCORD_ADMIN_SECRET": SECRET, "CONCORD_TRUST_PROXY": "1",
           "CONCORD_BASE_URL": f"http://127.0.0.1:{proxy_port}"}
    hosts = []
    for label in ("host-a", "host-b"):
        root = _host_copy(tmp_path / label)
        hosts.append(Host(root, *start_server(url, tmp_path, env, root=root)))
    ports = [int(h.url.rsplit(":", 1)[1]) for h in hosts]
    proxy, nginx = parts.start_nginx(tmp_path / "nginx", ports, port=proxy_port)
    yield {"url": proxy, "db_url": url, "db": db, "token": token, "hosts": hosts,
           "server": server}
    nginx.terminate()
    nginx.wait(timeout=10)
    for host in hosts:
        stop(host.proc)
    db.close()
    pg.close_pool(url)
    server.drop_database(name)


def _open(chromium, cluster):
    context = chromium.new_context()
    page = context.new_page()
    page.goto(f"{cluster['url']}/?token={cluster['token']}")
    _ready(page)
    return page


def _ready(page) -> None:
    page.get_by_text(f" / {TOTAL} rated").first.wait_for(timeout=90_000)
    page.locator("html[data-concord-keys='ready']").wait_for(state="attached",
                                                             timeout=60_000)
    img = page.locator('[data-testid="stImage"] img').first
    img.wait_for(timeout=30_000)
    page.wait_for_function("(el) => el.complete && el.naturalWidth > 0",
                           arg=img.element_handle(), timeout=30_000)


def _shown(page) -> int:
    """The count of rated images the page shows (what it acknowledged)."""
    text = page.get_by_text(f" / {TOTAL} rated").first.inner_text()
    return int(re.search(rf"(\d+) / {TOTAL} rated", text).group(1))


def _press_submit(page) -> None:
    page.keyboard.press("3")
    page.keyboard.press("w")
    page.keyboard.press("Enter")


def _rate(page, times: int) -> int:
    """Submit ``times`` ratings, each acknowledged (the count goes up); the last count."""
    for _ in range(times):
        done = _shown(page)
        _press_submit(page)
        page.get_by_text(f"{done + 1} / {TOTAL} rated").first.wait_for(timeout=60_000)
        page.locator("html[data-concord-keys='ready']").wait_for(state="attached",
                                                                 timeout=60_000)
    return _shown(page)


def _stored(cluster) -> tuple[int, int]:
    """(images the rater has a current rating on, (image, criterion) keys stored twice),
    read on a new connection (a server crash broke the ones opened before)."""
    db = open_db(cluster["db_url"])
    try:
        images = db.execute("SELECT COUNT(DISTINCT image_id) FROM current_ratings").fetchone()[0]
        twice = db.execute("SELECT COUNT(*) FROM (SELECT image_id, rater_id, criterion "
                           "FROM current_ratings GROUP BY image_id, rater_id, criterion "
                           "HAVING COUNT(*) > 1) AS twice").fetchone()[0]
    finally:
        db.close()
    return images, twice


def test_a_rater_rates_through_the_proxy_into_one_database(cluster, chromium):
    page = _open(chromium, cluster)
    try:
        assert _rate(page, 3) == 3
    finally:
        page.context.close()
    assert _stored(cluster) == (3, 0)
    assert cluster["db"].execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == 6  # 2 each
    # The host that served the rater keeps its files in its own folder, none in the repo's.
    serving = [h for h in cluster["hosts"] if h.media(cluster["db_url"])]
    assert len(serving) == 1
    stem = local_stem(cluster["db_url"])
    assert not list(stem.parent.glob(stem.name + ".*"))


def test_a_killed_app_process_loses_nothing_acknowledged(cluster, chromium):
    page = _open(chromium, cluster)
    try:
        acknowledged = _rate(page, 2)
        first = next(h for h in cluster["hosts"] if h.media(cluster["db_url"]))
        _press_submit(page)
        os.kill(first.proc.pid, signal.SIGKILL)  # during the submit: it may or may not land
        first.proc.wait(timeout=30)
        # The page reconnects through the proxy, which now sends it to the other host;
        # the rater is signed in again from the token in the URL.
        _ready(page)
        after_kill = _shown(page)
        assert after_kill in (acknowledged, acknowledged + 1)
        final = _rate(page, 2)
        assert final == after_kill + 2
        assert page.locator(TRACEBACK).count() == 0
    finally:
        page.context.close()
    other = next(h for h in cluster["hosts"] if h is not first)
    assert other.media(cluster["db_url"])  # the rater went on at the other host
    assert _stored(cluster) == (final, 0)


@contextlib.contextmanager
def _database_down(page, server, acknowledged: int, *, crash_first: bool) -> Iterator[None]:
    """Crash the database server before the rater's next submit (``crash_first``) or just
    after pressing it (during the submit: it may land or not); wait for the page's answer
    (a message, a traceback, or the count going up), run the block, start the server."""
    if crash_first:
        server.crash()
    _press_submit(page)
    if not crash_first:
        server.crash()
    try:
        page.locator(f"{TRACEBACK}, :text('try again'), "
                     f":text('{acknowledged + 1} / {TOTAL} rated')").first.wait_for(
                         timeout=90_000)
        yield
    finally:
        server.resume()


def test_a_database_restart_during_submits_loses_nothing_acknowledged(cluster, chromium):
    page = _open(chromium, cluster)
    try:
        acknowledged = _rate(page, 2)
        with _database_down(page, cluster["server"], acknowledged, crash_first=False):
            pass
        page.reload()  # the page works again once reloaded
        _ready(page)
        after = _shown(page)  # the submit in flight is there or not, never twice
        assert after in (acknowledged, acknowledged + 1)
        final = _rate(page, 2)
        assert final == after + 2
    finally:
        page.context.close()
    assert _stored(cluster) == (final, 0)


def test_a_submit_while_the_database_is_down_asks_to_try_again(cluster, chromium):
    page = _open(chromium, cluster)
    try:
        acknowledged = _rate(page, 1)
        with _database_down(page, cluster["server"], acknowledged, crash_first=True):
            # one retryable line instead of a traceback; nothing was stored
            page.get_by_text("please try again").first.wait_for(timeout=90_000)
            assert page.locator(TRACEBACK).count() == 0
        page.reload()  # once the server is back, the page works again
        _ready(page)
        assert _shown(page) == acknowledged
        final = _rate(page, 1)
        assert final == acknowledged + 1 and page.locator(TRACEBACK).count() == 0
    finally:
        page.context.close()
    assert _stored(cluster) == (acknowledged + 1, 0)


def test_more_raters_than_pooled_connections_on_one_process(server, tmp_path, chromium):
    name = f"pool_{os.getpid()}"
    url = server.create_database(name)
    db = open_db(url)
    studies.import_manifest(db, make_folder_study(tmp_path / "px", prompts=4,
                                                  models=("a", "b"), k=20))
    raters = [f"r{i}" for i in range(pg.POOL_MAX + 2)]
    tokens = [i.url.split("token=")[1] for i in studies.invite(db, "px", raters, "http://x")]
    app, proc = start_server(url, tmp_path, {"CONCORD_ADMIN_SECRET": SECRET},
                             root=_host_copy(tmp_path / "host"))  # its files stay in tmp
    try:
        for token in tokens:  # one rater after another, each closing the tab when done
            context = chromium.new_context()
            try:
                page = context.new_page()
                page.goto(f"{app}/?token={token}")
                page.get_by_text(f"0 / {TOTAL} rated").first.wait_for(timeout=60_000)
            finally:
                context.close()
    finally:
        stop(proc)
        db.close()
        pg.close_pool(url)
        server.drop_database(name)

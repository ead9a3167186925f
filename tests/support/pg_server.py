"""A throw-away PostgreSQL server for the tests and the benches.

``PgServer`` runs ``initdb`` into a fresh temporary folder and ``pg_ctl start`` on a Unix
socket in that folder (no TCP port), and removes it all on ``stop()``; an ``atexit`` hook
stops it too when a run ends without reaching ``stop()``. initdb and postgres refuse to run
as root, so under uid 0 the server programs run as Debian's ``postgres`` user, which then
owns the folder.
"""

from __future__ import annotations

import atexit
import os
import pwd
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

MISSING_REASON = ("PostgreSQL server programs (initdb, pg_ctl) not found; "
                  "install Debian's postgresql")
PROGRAMS = ("initdb", "pg_ctl", "postgres")
LIB_ROOT = Path("/usr/lib/postgresql")
SERVER_USER = "postgres"
# Settings for a test server: many short connections (a pool per app process, threads),
# little memory, durable commits (restart tests rely on WAL replay of what was acknowledged).
SETTINGS = {
    "listen_addresses": "",
    "max_connections": "200",
    "shared_buffers": "32MB",
    "fsync": "on",
    "synchronous_commit": "on",
    "log_min_messages": "warning",
}


def _has_programs(folder: Path) -> bool:
    return all(os.access(folder / name, os.X_OK) for name in PROGRAMS)


def _version_key(folder: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", folder.parent.name))


def find_binaries() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres: ``pg_config --bindir``, else the
    newest ``/usr/lib/postgresql/<version>/bin``, else the one on PATH; None when absent."""
    pg_config = shutil.which("pg_config")
    if pg_config:
        done = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True,
                              check=False)
        folder = Path(done.stdout.strip())
        if done.returncode == 0 and done.stdout.strip() and _has_programs(folder):
            return folder
    candidates = [f for f in LIB_ROOT.glob("*/bin") if _has_programs(f)]
    if candidates:
        return max(candidates, key=_version_key)
    initdb = shutil.which("initdb")
    if initdb and _has_programs(Path(initdb).parent):
        return Path(initdb).parent
    return None


def unavailable_reason() -> str | None:
    """One line saying why no server can be started here, or None when one can."""
    return None if find_binaries() is not None else MISSING_REASON


def _server_account() -> pwd.struct_passwd | None:
    """The account the server programs run as: None for the current user, or ``postgres``
    when running as root (which initdb and postgres refuse)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        raise RuntimeError(f"running as root and there is no {SERVER_USER!r} user to run "
                           "PostgreSQL as (initdb refuses root)") from None


def _traversable_by_all(folder: Path) -> bool:
    return all(p.stat().st_mode & stat.S_IXOTH for p in [folder, *folder.parents])


class PgServer:
    """``with PgServer() as server: psycopg.connect(server.url("postgres"))``."""

    def __init__(self, port: int = 5432, settings: dict[str, str] | None = None) -> None:
        self.port = port
        self.settings = {**SETTINGS, **(settings or {})}
        self.bindir: Path | None = None
        self.folder: Path | None = None
        self._account = _server_account()
        self._running = False

    @property
    def data(self) -> Path:
        return self._folder() / "data"

    @property
    def sockdir(self) -> Path:
        return self._folder() / "sock"

    @property
    def socket(self) -> Path:
        return self.sockdir / f".s.PGSQL.{self.port}"

    @property
    def log(self) -> Path:
        return self._folder() / "server.log"

    def _folder(self) -> Path:
        if self.folder is None:
            raise RuntimeError("PgServer not started")
        return self.folder

    def url(self, dbname: str = "postgres") -> str:
        """A libpq URL for ``dbname`` as the superuser ``postgres``, over the socket."""
        return (f"postgresql://postgres@/{quote(dbname, safe='')}"
                f"?host={quote(str(self.sockdir), safe='/')}&port={self.port}")

    def start(self) -> PgServer:
        """initdb into a fresh temporary folder and start the server; returns self."""
        self.bindir = find_binaries()
        if self.bindir is None:
            raise RuntimeError(MISSING_REASON)
        self.folder = self._make_folder()
        atexit.register(self.stop)
        try:
            self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres",
                      "--no-sync", "-E", "UTF8", "--locale", "C")
            self._start_server()
        except BaseException:
            self.stop()
            raise
        return self

    def _make_folder(self) -> Path:
        base = Path(tempfile.gettempdir())
        # The server user must reach the folder, and a socket path is limited to 107 bytes.
        if (self._account and not _traversable_by_all(base)) or len(str(base)) > 60:
            base = Path("/tmp")
        folder = Path(tempfile.mkdtemp(prefix="concord-pg-", dir=base))
        (folder / "sock").mkdir()
        if self._account:
            for path in (folder, folder / "sock"):
                os.chown(path, self._account.pw_uid, self._account.pw_gid)
        return folder

    def _start_server(self) -> None:
        options = ["-k", str(self.sockdir), "-p", str(self.port)]
        for name, value in self.settings.items():
            options += ["-c", f"{name}={value}"]
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "120",
                  "-o", shlex.join(options), "start")
        self._running = True

    def _run(self, program: str, *args: str, check: bool = True) -> None:
        if self.bindir is None:
            raise RuntimeError("PgServer not started")
        command = [str(self.bindir / program), *args]
        if self._account:
            command = ["setpriv", f"--reuid={self._account.pw_uid}",
                       f"--regid={self._account.pw_gid}", "--init-groups", *command]
        done = subprocess.run(command, cwd=self._folder(), capture_output=True, text=True,
                              check=False)
        if check and done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{program} failed (exit {done.returncode}): "
                               f"{done.stderr.strip() or done.stdout.strip()}\n{log}")

    def restart(self) -> None:
        """Stop the server abruptly (``-m immediate``: no checkpoint, as after a crash) and
        start it again on the same data folder; committed work comes back by WAL replay."""
        self.crash()
        self.resume()

    def crash(self) -> None:
        """Stop the server abruptly (``-m immediate``), keeping its data folder: every
        connection drops and new ones are refused until :meth:`resume`."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        self._running = False

    def resume(self) -> None:
        """Start the server again after :meth:`crash` (WAL replay of what was committed)."""
        self._start_server()

    def stop(self) -> None:
        """Stop the server (``-m immediate``) and remove its folder; safe to call twice."""
        atexit.unregister(self.stop)
        if self.folder is None:
            return
        if self._running:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop",
                      check=False)
            self._running = False
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder = None

    def admin(self, dbname: str = "postgres"):
        """An autocommit superuser connection (psycopg) to ``dbname``."""
        import psycopg

        return psycopg.connect(self.url(dbname), autocommit=True)

    def create_database(self, name: str, template: str | None = None) -> str:
        """Create database ``name`` (a copy of ``template`` when given); returns its URL."""
        from psycopg import sql

        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
        with self.admin() as conn:
            conn.execute(statement)
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop database ``name`` if it exists, ending its open connections."""
        from psycopg import sql

        with self.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                         .format(sql.Identifier(name)))

    def __enter__(self) -> PgServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

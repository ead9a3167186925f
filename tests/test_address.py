"""The address in the links the command line prints: CONCORD_BASE_URL, else CONCORD_PORT,
else the address the app noted beside the database (its own port), else port 8501; a
file that does not hold one http(s) address is ignored."""

from __future__ import annotations

import pytest

from concord.cli import main
from concord.config import Settings, address_file
from concord.errors import ConcordError
from concord.services import studies
from concord.store import open_db
from tests.helpers import make_folder_study


@pytest.fixture
def dbp(tmp_path, monkeypatch):
    for name in ("CONCORD_BASE_URL", "CONCORD_PORT"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "c.db"
    studies.import_manifest(open_db(path), make_folder_study(tmp_path / "s", prompts=1))
    return path


def _link(capsys, dbp) -> str:
    capsys.readouterr()
    assert main(["--db", str(dbp), "raters", "add", "--study", "s", "ann"]) == 0
    return capsys.readouterr().out.split("\t")[1].split("/?token=")[0]


def test_links_name_the_port_the_app_serves(dbp, capsys, monkeypatch):
    assert _link(capsys, dbp) == "http://localhost:8501"  # nothing known: the default
    address_file(dbp).write_text("http://localhost:8561\n")  # what `make run PORT=8561` notes
    assert _link(capsys, dbp) == "http://localhost:8561"
    monkeypatch.setenv("CONCORD_PORT", "8600")
    assert _link(capsys, dbp) == "http://localhost:8600"
    monkeypatch.setenv("CONCORD_BASE_URL", "https://rate.example.org/concord/")
    assert _link(capsys, dbp) == "https://rate.example.org/concord"


@pytest.mark.parametrize("content", [b"javascript:alert(1)", b"http://a b", b"\xff\xfe",
                                     b"http://" + b"x" * 5000, b"", b"http://ok\nhttp://x"])
def test_an_address_file_that_is_not_one_address_is_ignored(dbp, capsys, content):
    address_file(dbp).write_bytes(content)
    assert _link(capsys, dbp) == "http://localhost:8501"


def test_an_address_file_that_is_a_folder_is_ignored(dbp, capsys):
    address_file(dbp).mkdir()
    assert _link(capsys, dbp) == "http://localhost:8501"


@pytest.mark.parametrize("port", ["0", "70000", "80a", "-1", "9" * 50])
def test_a_wrong_port_is_named(monkeypatch, port):
    monkeypatch.setenv("CONCORD_PORT", port)
    with pytest.raises(ConcordError, match="CONCORD_PORT"):
        Settings.from_env()

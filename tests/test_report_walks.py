"""A report request is resolved once at the edge: ``stats``, the dashboard and the dataset
export look the study up, and query its dimensions and (metric, judge) pairs, once each
(concord.services.report.request), however many layers the report passes through."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from concord.cli import main
from concord.store import studies as study_store

pytestmark = pytest.mark.both_engines

WALKED = ("get_study", "dimensions", "metric_judges")


@pytest.fixture
def walks(monkeypatch):
    """Counts of the store's study lookups and filter queries, by function name."""
    seen: Counter[str] = Counter()
    for name in WALKED:
        real = getattr(study_store, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            seen[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(study_store, name, counted)
    return seen


def _stats(db_path, *args: str) -> None:
    assert main(["--db", str(db_path), "stats", "--study", "dash", "--json", "--n-boot", "20",
                 "--n-perm", "20", *args]) == 0


@pytest.mark.parametrize(("args", "expected"), [
    (("--no-cache",), {"get_study": 1, "dimensions": 1}),
    (("--no-cache", "--dimension", "color", "--metric", "vqascore", "--by-dimension"),
     {"get_study": 1, "dimensions": 1, "metric_judges": 1}),
])
def test_stats_computed_looks_the_study_up_once(seeded, walks, capsys, args, expected):
    _, db_path = seeded
    _stats(db_path, *args)
    capsys.readouterr()
    assert dict(walks) == expected


def test_stats_from_the_cache_looks_the_study_up_once(seeded, walks, capsys):
    _, db_path = seeded
    _stats(db_path)
    walks.clear()
    _stats(db_path)  # served from the report cache
    capsys.readouterr()
    assert dict(walks) == {"get_study": 1, "dimensions": 1}


def test_the_dashboard_looks_the_study_up_once_and_shares_the_cli_entry(seeded, walks, capsys,
                                                                         monkeypatch):
    from concord.services.report import study as report
    from concord.ui import dashboard_view as view

    db, db_path = seeded
    assert main(["--db", str(db_path), "stats", "--study", "dash", "--json"]) == 0
    printed = capsys.readouterr().out
    computed: list[int] = []
    real = report.study_report
    monkeypatch.setattr(report, "study_report",
                        lambda *a, **kw: computed.append(1) or real(*a, **kw))
    walks.clear()
    view.numbers.clear()
    data = view.numbers(str(db_path), "dash", None, None, "mean_image_means",
                        report.data_version(db))
    assert dict(walks) == {"get_study": 1, "dimensions": 1}
    assert computed == []  # the report stats stored, with the dashboard's default options
    assert data["report"] == json.loads(printed)
    assert view.downloader(str(db_path), "dash", "stats")() == printed.rstrip("\n").encode()
    assert computed == []

"""One list of the report's benchmark sections: the stats document, the CLI tables and the
dashboard all follow ``concord.services.report.BENCHMARK_SECTIONS``."""

from __future__ import annotations

from concord.cli import stats as stats_cli
from concord.services.report import BENCHMARK_SECTIONS
from concord.stats.benchmarks.stored import SECTIONS
from tests.helpers import ROOT


def test_the_sections_are_the_benchmark_tables_plus_problems():
    shown = [k for k, _ in BENCHMARK_SECTIONS]
    assert shown == [k for k in (*SECTIONS, "problems") if k != "tiif_accuracy"]


def test_the_cli_has_columns_for_every_section():
    assert set(stats_cli._BENCHMARK_COLUMNS) == {k for k, _ in BENCHMARK_SECTIONS}


def test_the_dashboard_reads_the_shared_list():
    page = (ROOT / "pages" / "dashboard.py").read_text()
    assert "from concord.services.report import BENCHMARK_SECTIONS" in page
    assert "for key, title in BENCHMARK_SECTIONS:" in page

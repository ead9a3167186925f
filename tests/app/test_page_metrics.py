"""AppTest: the researcher's Metrics page starts a scoring process, lists it, refuses bad
input, and keeps models (torch, transformers, the evaluators) out of the app process."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from concord.store import runs as run_store
from tests.app.test_page_research import researcher
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory):
    from tests.support.tiny_models import save_tiny_vlm

    return save_tiny_vlm("llava", tmp_path_factory.mktemp("judge") / "llava")


def _fill(at, **values):
    at.selectbox(key="metrics_study").set_value(values.get("study", "ui"))
    at.selectbox(key="metrics_metric").set_value(values.get("metric", "vqascore"))
    at.text_input(key="metrics_judge").input(values.get("judge", ""))
    at.selectbox(key="metrics_device").set_value("cpu")
    at.text_input(key="metrics_batch").input(values.get("batch", "auto"))
    at.text_area(key="metrics_options").input(values.get("options", ""))
    at.button[0].click().run()
    assert not at.exception, at.exception


def test_page_renders_with_the_metric_list(app_env):
    at = researcher("pages/metrics.py")
    assert at.title[0].value == "Metrics"
    metrics = at.selectbox(key="metrics_metric").options
    assert any(m.startswith("geneval2-tifa") for m in metrics)
    assert not any(m.startswith("tifa") for m in metrics)
    assert "No run yet." in [i.value for i in at.info]


def test_bad_input_starts_nothing(app_env):
    at = researcher("pages/metrics.py")
    _fill(at, batch="0")
    assert "batch size must be a number >= 1 or auto" in at.error[0].value
    _fill(at, options="top_k")
    assert "options are KEY=VALUE" in at.error[0].value
    assert run_store.list_runs(app_env["db"]) == []


def test_start_a_run_and_see_it_done(app_env, tiny_llava):
    at = researcher("pages/metrics.py")
    _fill(at, judge=str(tiny_llava), batch="4", options="repetition_penalty=1.0")
    assert at.success[0].value.startswith("Run ")
    run_id = at.success[0].value.split()[1]
    deadline = time.monotonic() + 240
    while (run := run_store.get_run(app_env["db"], run_id)) is None or run.status == "running":
        assert time.monotonic() < deadline, "the run did not finish"
        time.sleep(0.5)
    assert run.status == "done" and run.n_scored == 9
    at.run()
    table = at.dataframe[-1].value
    row = table[table["run"] == run_id].iloc[0]
    assert (row["status"], row["scored"], row["options"]) == ("done", 9,
                                                             "repetition_penalty=1.0")
    assert row["judge"] == str(tiny_llava.resolve())


def test_raters_do_not_get_the_metrics_page(app_env):
    from tests.app.conftest import rater_app

    at = rater_app(app_env["tokens"]["ann"])
    at.switch_page("pages/metrics.py").run()  # every page is known; this one refuses
    assert not at.exception
    assert "This page is for researchers" in at.error[0].value
    assert not at.title


def test_the_app_process_never_loads_models(app_env):
    code = (
        "import sys\n"
        "from tests.app.conftest import through_app_always\n"
        "from tests.app.test_page_research import researcher\n"
        "through_app_always()\n"
        "at = researcher('pages/metrics.py')\n"
        "assert at.selectbox(key='metrics_metric').options\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in\n"
        "             ('torch', 'transformers', 'evaluators')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    # the registry's data (names, directions, judges) only: no metric class, no model code
    assert out.stdout.strip().splitlines()[-1] == \
        "['evaluators', 'evaluators.base', 'evaluators.registry']"

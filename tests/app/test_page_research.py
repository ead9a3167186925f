"""AppTest: the researcher pages (studies, raters, progress, export) and what they change."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from concord.services.exports import downloads
from concord.store import studies as study_store
from tests.app.conftest import APP
from tests.helpers import make_folder_study

pytestmark = pytest.mark.both_engines


def researcher(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_input(key="admin_secret").input("letmein-test-secret-7Qx9")
    at.button[0].click().run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_every_research_page_renders(app_env):
    for page in ("pages/studies.py", "pages/raters.py", "pages/progress.py",
                 "pages/export.py", "pages/dashboard.py"):
        at = researcher(page)
        assert at.title, page


def test_raters_do_not_get_research_pages(app_env):
    from tests.app.conftest import rater_app

    # Every page is known (a typed URL never ends on "Page not found"), but a rater who
    # opens a research page gets one line and nothing of the page.
    at = rater_app(app_env["tokens"]["ann"])
    for page in ("pages/studies.py", "pages/raters.py", "pages/dashboard.py",
                 "pages/export.py", "pages/progress.py", "pages/adjudicate.py",
                 "pages/metrics.py"):
        at.switch_page(page).run()
        assert not at.exception, page
        assert [e.value for e in at.error] == [
            "This page is for researchers; you are signed in as 'ann'. Your own pages are "
            "in the menu."], page
        assert not at.title and not at.dataframe and not at.text_input, page


def test_invite_from_the_raters_page_prints_links(app_env):
    at = researcher("pages/raters.py")
    at.text_area(key="invite_names").input("cleo\ndev")
    at.button[0].click().run()
    assert not at.exception
    code = at.code[0].value
    assert code.count("?token=") == 2
    assert "cleo" in code
    names = [r["name"] for r in app_env["db"].query("SELECT name FROM raters")]
    assert {"cleo", "dev"} <= set(names)


def test_import_a_manifest_from_the_studies_page(app_env, tmp_path):
    manifest = make_folder_study(tmp_path / "fresh", prompts=2, models=("x", "y"))
    at = researcher("pages/studies.py")
    at.text_input(key="import_path").input(str(manifest))
    at.button[0].click().run()
    assert not at.exception
    assert "2 prompts, 4 images added" in at.success[0].value
    assert "fresh" in study_store.list_study_names(app_env["db"])


def test_bad_manifest_shows_every_problem_and_imports_nothing(app_env, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: nope\nlayout: sideways\n")
    at = researcher("pages/studies.py")
    at.text_input(key="import_path").input(str(bad))
    at.button[0].click().run()
    assert "unknown layout" in at.error[0].value
    assert "nope" not in study_store.list_study_names(app_env["db"])


def test_delete_needs_the_name_typed(app_env):
    at = researcher("pages/studies.py")
    at.selectbox(key="delete_study").set_value("ui")
    at.text_input(key="delete_confirm").input("wrong")
    at.button[1].click().run()
    assert "does not match" in at.error[0].value
    assert "ui" in study_store.list_study_names(app_env["db"])
    at.text_input(key="delete_confirm").input("ui")
    at.button[1].click().run()
    assert "Deleted 'ui'" in at.success[0].value
    assert "ui" not in study_store.list_study_names(app_env["db"])


def test_export_page_offers_every_format(app_env):
    at = researcher("pages/export.py")
    labels = [b.label for b in at.get("download_button")]
    # every format but the questionnaire answers: this study asks no questions
    assert labels == [d.label for d in downloads.DOWNLOADS if d.key != "questionnaire"]
    assert "Label Studio labeling config (XML)" in labels  # the study has a default rubric


def test_a_run_not_started_yet_says_so_instead_of_dots(app_env, monkeypatch):
    # A run launched a moment ago has no row yet: its line read "… on …".
    from concord.services.metrics import runs as metric_runs

    monkeypatch.setattr(metric_runs, "active", lambda db: ["run-just-launched"])
    at = researcher("pages/metrics.py")
    lines = [m.value for m in at.markdown if "run-just-launched" in m.value]
    assert lines and "… on …" not in lines[0]
    assert "metric and study not known yet" in lines[0]


def test_adjudication_starts_empty_and_a_save_without_a_choice_stores_nothing(app_env):
    from tests.app.test_page_adjudicate import _rate_apart

    _rate_apart(app_env["db"])
    at = researcher("pages/adjudicate.py")
    assert at.selectbox(key="adj_v_0").value is None  # it used to preselect 0
    at.button(key="FormSubmitter:adj_form_0-Save").click().run()
    assert not at.exception, at.exception
    assert "nothing was saved" in at.error[0].value
    assert app_env["db"].execute("SELECT COUNT(*) FROM adjudications").fetchone()[0] == 0


def test_the_study_link_platform_defaults_as_in_the_cli(app_env):
    import argparse

    from concord.cli import crowd as crowd_cli

    parser = argparse.ArgumentParser()
    crowd_cli.add_arguments("crowd", parser)
    cli_default = parser.parse_args(["link", "--study", "ui"]).platform
    at = researcher("pages/raters.py")
    assert at.selectbox(key="crowd_platform").value == cli_default == "prolific"


def test_progress_counts_name_what_they_count_and_leave_out_excluded_raters(app_env):
    from concord.services import exclusions
    from concord.services.labelling import rating
    from concord.services.labelling.common import new_submission
    from concord.store import raters as rater_store

    db = app_env["db"]
    for name, n in (("ann", 2), ("ben", 1)):
        rid = rater_store.get_rater(db, name).id
        for _ in range(n):
            item = rating.next_item(db, "ui", rid)
            rating.submit(db, "ui", rid, item.image_id, {"SC": 1, "PR": 1},
                          submission=new_submission())
    at = researcher("pages/progress.py")
    shown = {m.label: m.value for m in at.metric}
    assert shown["Rating values"] == "6" and shown["Raters who rated"] == "2"
    assert shown["Rated images"].endswith("/ 9")
    exclusions.exclude_rater(db, "ui", "ben", "too fast")
    at = researcher("pages/progress.py")
    shown = {m.label: m.value for m in at.metric}
    assert (shown["Rating values"], shown["Raters who rated"]) == ("4", "1")
    assert any("ben" in c.value and "excluded" in c.value for c in at.caption)
    table = at.dataframe[0].value
    assert table.set_index("rater").loc["ben", "excluded"]  # still listed, marked

"""AppTest: the researcher pages (studies, raters, progress, export) and what they change."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from concord.services import downloads
from concord.store import studies as study_store
from tests.app.conftest import APP
from tests.helpers import make_folder_study


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

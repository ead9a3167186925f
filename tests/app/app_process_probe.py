"""Run every page registered in app.py through AppTest, then report what the process loaded.

Run as ``python -m tests.app.app_process_probe FOLDER`` (a fresh interpreter, so nothing a
test imported before counts); prints one JSON object: the pages run, any exception each
raised, and which of torch, transformers and the evaluators' model code ended up in
``sys.modules`` (the registry's data, ``evaluators.registry`` with the package and its
torch-free ``evaluators.base``, is how the app knows the metrics).
Used by tests/test_layout.py.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

FORBIDDEN = ("torch", "transformers", "evaluators")
REGISTRY = ("evaluators", "evaluators.base", "evaluators.registry")
SECRET = "probe-secret-for-one-run"  # a throw-away admin secret for this run


def registered_pages(app: Path) -> list[str]:
    """The page files app.py registers (``st.Page("pages/...")`` or, as now, the
    ``Spec("pages/...")`` of its page table)."""
    text = app.read_text(encoding="utf-8")
    return re.findall(r'(?:st\.Page|Spec)\(\s*"(pages/[^"]+\.py)"', text)


def seed(folder: Path) -> str:
    """A database with a rating+ranking study and a pair study; the rater's token."""
    from concord.services import studies
    from concord.services.metrics import scores as metric_scores
    from concord.store.db import open_db
    from tests.helpers import make_folder_study

    db = open_db(folder / "probe.db")
    models = ("alpha", "beta", "gamma", "delta")
    studies.import_manifest(db, make_folder_study(folder / "ui", prompts=3, models=models,
                                                  protocol="both"))
    studies.import_manifest(db, make_folder_study(
        folder / "pp", prompts=3, models=models, protocol="pair",
        extra="pairs:\n  pairs_per_prompt: 2\n  seed: 1\n  raters_per_pair: 2\n"))
    # metric scores, so the dashboard needs each metric's direction (gned: lower is better)
    scores = folder / "scores.csv"
    scores.write_text("prompt_id,model,metric,value\n" + "".join(
        f"p{p},{m},{metric},{(p + i) / 10}\n" for p in range(3)
        for i, m in enumerate(models) for metric in ("gned", "vqascore")))
    metric_scores.import_scores(db, "ui", "csv", scores)
    token = studies.invite(db, "ui", ["ann"], "http://x")[0].url.split("token=")[1]
    studies.invite(db, "pp", ["ann"], "http://x")
    db.close()
    return token


def main() -> None:
    folder = Path(sys.argv[1])
    os.environ["CONCORD_DB"] = str(folder / "probe.db")
    os.environ["CONCORD_ADMIN_SECRET"] = SECRET
    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import APP, through_app_always

    through_app_always()
    token = seed(folder)
    pages = registered_pages(Path(APP))
    ran: dict[str, list[str]] = {}

    def visit(at: AppTest, page: str) -> None:
        try:
            at.switch_page(page).run()
        except ValueError:  # not in this user's navigation
            return
        ran[page] = [str(e.value) for e in at.exception]

    researcher = AppTest.from_file(APP, default_timeout=120).run()
    ran["pages/sign_in.py"] = [str(e.value) for e in researcher.exception]
    researcher.text_input(key="admin_secret").input(SECRET)
    researcher.button[0].click().run()
    rater = AppTest.from_file(APP, default_timeout=120)
    rater.query_params["token"] = token
    rater.run()
    for page in pages:
        for at in (researcher, rater):
            if page not in ran:
                visit(at, page)
    for page in pages:  # a page no user here reaches (onboarding): run on its own
        if page not in ran:
            at = AppTest.from_file(str(Path(APP).parent / page), default_timeout=120).run()
            ran[page] = [str(e.value) for e in at.exception]
    loaded = sorted(m for m in sys.modules
                    if m.split(".")[0] in FORBIDDEN and m not in REGISTRY)
    print(json.dumps({"pages": sorted(ran), "exceptions": {p: e for p, e in ran.items() if e},
                      "registered": sorted(pages), "loaded": loaded}))


if __name__ == "__main__":
    main()

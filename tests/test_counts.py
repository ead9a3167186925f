"""One word per count: rated images, rating values (SC and PR count apart), raters who
rated; the same in `raters list`, `studies` and the Progress page."""

from __future__ import annotations

import re

import pytest

from concord.cli import main
from concord.services import studies
from concord.services.labelling import rating
from concord.services.labelling.common import new_submission
from concord.store import open_db
from concord.store import raters as rater_store
from tests.helpers import make_folder_study

pytestmark = pytest.mark.both_engines


def test_raters_list_and_studies_say_rated_images_and_rating_values(database_at, tmp_path,
                                                                     capsys):
    path = database_at("c")
    db = open_db(path)
    studies.import_manifest(db, make_folder_study(tmp_path / "one", prompts=2))
    studies.import_manifest(db, make_folder_study(tmp_path / "two", prompts=2))
    studies.invite(db, "one", ["ann"], "http://x")
    rid = rater_store.get_rater(db, "ann").id
    rater_store.add_to_study(db, rid, db.execute("SELECT id FROM studies WHERE name = 'two'"
                                                 ).fetchone()[0])
    for study in ("one", "one", "two"):
        item = rating.next_item(db, study, rid)
        rating.submit(db, study, rid, item.image_id, {"SC": 1, "PR": 1},
                      submission=new_submission())
    capsys.readouterr()
    assert main(["--db", str(path), "raters", "list", "--study", "one"]) == 0
    head, row = capsys.readouterr().out.splitlines()[:2]
    cells = dict(zip(head.split(), re.split(r"\s{2,}", row), strict=False))  # aligned columns
    # 2 images rated in study one: 2 rated images, 4 rating values (SC and PR apart); the
    # rating in study two is not counted for study one
    assert (cells["rated_images"], cells["rating_values"]) == ("2", "4")
    assert main(["--db", str(path), "studies"]) == 0
    out = capsys.readouterr().out
    assert "rated_images" in out and "rating_values" in out and " ratings " not in out


def test_stats_names_rating_values_rated_images_and_raters_who_rated(database_at, tmp_path,
                                                                      capsys):
    """Three raters, two of whom rate (the third only ranks): stats says so."""
    from concord.services.labelling import ranking

    path = database_at("c")
    db = open_db(path)
    studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=2, protocol="both",
                                                  models=("a", "b", "c"), k=3))
    studies.invite(db, "s", ["ann", "ben", "cat"], "http://x")
    for name in ("ann", "ben"):
        rid = rater_store.get_rater(db, name).id
        for _ in range(2):
            item = rating.next_item(db, "s", rid)
            rating.submit(db, "s", rid, item.image_id, {"SC": 1, "PR": 0.5},
                          submission=new_submission())
    cat = rater_store.get_rater(db, "cat").id
    rank_set = ranking.next_set(db, "s", cat)
    ranking.submit(db, "s", cat, rank_set, [[i.image_id] for i in rank_set.images])
    capsys.readouterr()
    assert main(["--db", str(path), "stats", "--study", "s", "--n-boot", "20"]) == 0
    out = capsys.readouterr().out
    rated = {r for (r,) in db.execute("SELECT DISTINCT image_id FROM ratings")}
    assert f"8 rating values of {len(rated)} rated images by 2 raters who rated" in out
    assert main(["--db", str(path), "stats", "--study", "s", "--json", "--n-boot", "20"]) == 0
    import json

    meta = json.loads(capsys.readouterr().out)["meta"]
    assert (meta["n_ratings"], meta["n_rated_images"], meta["n_raters_who_rated"],
            meta["n_raters"]) == (8, len(rated), 2, 3)

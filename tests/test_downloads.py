"""The Export page's downloads equal what ``python -m concord export`` writes."""

from __future__ import annotations

import io
import json
import zipfile

import pandas as pd
import pytest

from concord.cli import main
from concord.errors import ConcordError
from concord.services import adjudication, exclusions, studies
from concord.services.exports import downloads
from concord.store.db import open_db
from tests.foundation_helpers import seed_study

CLI = {"csv": ["--format", "csv"], "jsonl": ["--format", "jsonl"],
       "parquet": ["--format", "parquet"], "checklist": ["--format", "checklist"],
       "history": ["--format", "history", "--as", "csv"],
       "adjudications": ["--format", "adjudications", "--as", "csv"],
       "questionnaire": ["--format", "questionnaire", "--as", "csv"],
       "label-studio": ["--format", "label-studio"]}


pytestmark = pytest.mark.both_engines


@pytest.fixture
def seeded(database_at, tmp_path):
    path = database_at("c")
    db = open_db(path)
    seed_study(db, tmp_path, "dash", prompts=3, scores=False)
    top = adjudication.queue(db, "dash", "score")[0]
    adjudication.set_value(db, "dash", "score", top["item_id"], "SC", "1", actor="lead")
    db.close()
    return path


@pytest.mark.parametrize("key", sorted(CLI))
def test_each_download_equals_the_cli_export(seeded, tmp_path, key):
    out = tmp_path / f"cli.{key}"
    assert main(["--db", str(seeded), "export", "--study", "dash", *CLI[key],
                 "-o", str(out)]) == 0
    assert downloads.build(seeded, "dash", key) == out.read_bytes()


def test_imagenhub_zip_holds_the_cli_tsvs(seeded, tmp_path):
    folder = tmp_path / "tsv"
    assert main(["--db", str(seeded), "export", "--study", "dash", "--format", "imagenhub",
                 "-o", str(folder)]) == 0
    with zipfile.ZipFile(io.BytesIO(downloads.build(seeded, "dash", "imagenhub"))) as zf:
        zipped = {name: zf.read(name) for name in zf.namelist()}
    on_disk = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*.tsv")}
    assert zipped == on_disk and on_disk


def test_label_studio_config_matches_its_tasks(seeded):
    config = downloads.build(seeded, "dash", "label-studio-config").decode()
    tasks = json.loads(downloads.build(seeded, "dash", "label-studio"))
    names = {r["from_name"] for t in tasks for a in t["annotations"] for r in a["result"]}
    assert names == {"SC", "PR"}
    assert all(f'name="{n}"' in config for n in names)


def test_excluded_raters_only_on_request(seeded):
    db = open_db(seeded)
    rater = sorted(pd.read_csv(io.BytesIO(downloads.build(seeded, "dash", "csv")))["rater"])[0]
    exclusions.exclude_rater(db, "dash", rater, "test", actor="lead")
    without = pd.read_csv(io.BytesIO(downloads.build(seeded, "dash", "csv")))
    with_all = pd.read_csv(io.BytesIO(downloads.build(seeded, "dash", "csv",
                                                      include_excluded=True)))
    assert rater not in set(without["rater"]) and rater in set(with_all["rater"])


def test_unknown_download_and_study(seeded):
    with pytest.raises(ConcordError, match="unknown download 'nope'"):
        downloads.build(seeded, "dash", "nope")
    with pytest.raises(ConcordError, match="no study named 'ghost'"):
        downloads.build(seeded, "ghost", "csv")


def test_check_names_a_study_that_is_gone(seeded):
    downloads.check(seeded, "dash")  # there: nothing raised
    db = open_db(seeded)
    studies.delete(db, "dash")
    with pytest.raises(ConcordError, match="no study named 'dash'"):
        downloads.check(seeded, "dash")


def test_a_likert_study_with_other_criteria_downloads_like_the_cli(database_at, tmp_path):
    """Data shaped unlike our fixtures: a ratings-only study, a 1-7 scale on criteria
    named 'aesthetics' and 'faithfulness', two or three raters per image, gaps."""
    from concord.services.imports.ratings import import_ratings

    rows = ["prompt_id,model,rater,criterion,value"]
    for p in range(4):
        for model in ("sd-xl", "flux"):
            for r, rater in enumerate(("r1", "r2", "r3")):
                if (p + r) % 4 == 3:
                    continue  # not every rater saw every image
                for crit in ("aesthetics", "faithfulness"):
                    rows.append(f"p{p},{model},{rater},{crit},{1 + (p * 3 + r) % 7}")
    (tmp_path / "likert.csv").write_text("\n".join(rows) + "\n")
    path = database_at("l")
    db = open_db(path)
    import_ratings(db, "likert", "csv", tmp_path / "likert.csv",
                   criteria=["aesthetics=1..7", "faithfulness=1..7"])
    keys = [d.key for d in downloads.available(db, "likert")]
    db.close()
    for key in (k for k in keys if k in CLI):
        out = tmp_path / f"cli.{key}"
        assert main(["--db", str(path), "export", "--study", "likert", *CLI[key],
                     "-o", str(out)]) == 0
        assert downloads.build(path, "likert", key) == out.read_bytes(), key
    labels = pd.read_csv(io.BytesIO(downloads.build(path, "likert", "csv")))
    assert set(labels["criterion"]) == {"aesthetics", "faithfulness"}
    assert len(labels) == len(rows) - 1
    # The inline 1..7 scale is the study's rubric: whole numbers are Label Studio stars.
    config = downloads.build(path, "likert", "label-studio-config").decode()
    assert 'name="aesthetics"' in config and 'maxRating="7"' in config

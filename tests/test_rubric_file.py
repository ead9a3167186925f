"""``import-ratings --rubric path/to/rubric.yaml``: a rubric file checked like the packaged
ones, and kept in the study so that a moved or edited file cannot change it."""

from __future__ import annotations

import os

import pytest

from concord.cli import main
from concord.rubrics import DEFAULT_RUBRICS_DIR
from concord.services import rubric_choice
from concord.services.imports.ratings import import_ratings
from concord.store import studies as study_store
from concord.store.db import open_db
from tests.helpers import study_report

RATINGS = "prompt_id,model,rater,criterion,value\np1,a,r1,vividness,4\np1,b,r1,vividness,2\n" \
          "p1,a,r2,vividness,5\np1,b,r2,vividness,1\n"


def _rubric(folder, name="vivid", levels=(1, 2, 3, 4, 5), extra=""):
    text = (DEFAULT_RUBRICS_DIR / "likert-5.yaml").read_text(encoding="utf-8")
    text = text.replace("id: likert-5", f"id: {name}").replace("key: likert", "key: vividness")
    text = text.replace("scale: [1, 2, 3, 4, 5]", f"scale: [{', '.join(map(str, levels))}]")
    path = folder / f"{name}.yaml"
    path.write_text(text + extra, encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    ratings = tmp_path / "r.csv"
    ratings.write_text(RATINGS)
    return tmp_path, ratings


def test_a_rubric_file_is_used_and_kept_with_the_study(files, capsys):
    folder, ratings = files
    rubric = _rubric(folder)
    db_path = folder / "x.db"
    assert main(["--db", str(db_path), "import-ratings", "--study", "v", "--format", "csv",
                 "--rubric", str(rubric), str(ratings)]) == 0
    assert "rubric vivid (given)" in capsys.readouterr().out
    db = open_db(db_path)
    study = study_store.get_study(db, "v")
    assert study.rubric == "vivid"
    assert study.settings["rubric_files"]["vivid"] == rubric.read_text()
    # the file is edited into something else, then removed: the study keeps its rubric
    rubric.write_text("garbage: [")
    assert rubric_choice.rubric_for(study).criteria[0].key == "vividness"
    os.remove(rubric)
    assert study_report(db, "v", n_boot=10, n_perm=10)["human"]
    more = folder / "more.csv"
    more.write_text("prompt_id,model,rater,criterion,value\np2,a,r1,vividness,3\n")
    assert import_ratings(db, "v", "csv", more).added == 1
    bad = folder / "bad.csv"
    bad.write_text("prompt_id,model,rater,criterion,value\np2,b,r1,vividness,7\n")
    with pytest.raises(Exception, match="7"):  # off the kept scale, not some other scale
        import_ratings(db, "v", "csv", bad)
    db.close()


def test_a_rubric_file_with_a_problem_is_refused_in_one_line(files, capsys):
    folder, ratings = files
    rubric = _rubric(folder, levels=(1, 2, 3))  # levels 4 and 5 left without a scale value
    db_path = folder / "x.db"
    assert main(["--db", str(db_path), "import-ratings", "--study", "v", "--format", "csv",
                 "--rubric", str(rubric), str(ratings)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: rubric file {rubric}") and err.count("\n") == 1
    db = open_db(db_path)
    assert db.execute("SELECT COUNT(*) FROM studies").fetchone()[0] == 0
    db.close()


@pytest.mark.parametrize("kind", ["fifo", "missing", "bomb", "packaged-id", "directory"])
def test_hostile_rubric_paths(files, capsys, kind):
    folder, ratings = files
    path = folder / "r.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "bomb":
        lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        lines += [f"a{i}: &a{i} [*a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1},"
                  f" *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}]" for i in range(1, 9)]
        path.write_text("\n".join(lines) + "\n")
    elif kind == "packaged-id":
        path = _rubric(folder, name="likert-5", extra="# edited\n")
    elif kind == "directory":
        path = folder / "dir.yaml"
        path.mkdir()
    assert main(["--db", str(folder / "x.db"), "import-ratings", "--study", "v", "--format",
                 "csv", "--rubric", str(path), str(ratings)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and str(path) in err


def test_a_copy_of_a_packaged_rubric_is_accepted(files):
    folder, _ = files
    copy = folder / "likert-5.yaml"
    copy.write_text((DEFAULT_RUBRICS_DIR / "likert-5.yaml").read_text(encoding="utf-8"))
    choice = rubric_choice.explicit([str(copy)], [])
    assert choice.rubric_id == "likert-5"


def _manifest_study(folder, rubric_line: str):
    from tests.helpers import make_folder_study

    return make_folder_study(folder / "m", prompts=2, models=("a", "b"),
                             extra=f"{rubric_line}\n")


def test_a_manifest_rubric_file_is_read_next_to_the_manifest_and_kept(tmp_path, capsys):
    (tmp_path / "m" / "scales").mkdir(parents=True)
    rubric = _rubric(tmp_path / "m" / "scales")
    manifest = _manifest_study(tmp_path, "rubric: scales/vivid.yaml")
    db_path = tmp_path / "x.db"
    assert main(["--db", str(db_path), "import", str(manifest)]) == 0
    rubric.unlink()  # the study keeps its copy
    db = open_db(db_path)
    study = study_store.get_study(db, "m")
    assert study.rubric == "vivid"
    assert "vivid" in study.settings["rubric_files"]
    assert [c.key for c in rubric_choice.rubric_for(study).criteria] == ["vividness"]
    # the same manifest again (the file gone) is refused with the field, nothing changed
    assert main(["--db", str(db_path), "import", str(manifest)]) == 1
    err = capsys.readouterr().err
    assert "rubric" in err and "rubric file not found" in err and "vivid.yaml" in err


@pytest.mark.parametrize(("content", "says"), [
    ("id: nope\n: [", "invalid YAML"),
    (None, "of a packaged rubric but other contents"),
])
def test_a_bad_manifest_rubric_file_is_refused_with_the_field(tmp_path, capsys, content, says):
    (tmp_path / "m").mkdir()
    if content is None:  # a file called like a packaged rubric, with other contents
        path = _rubric(tmp_path / "m", name="likert-5", extra="# my own edit\n")
    else:
        path = tmp_path / "m" / "likert-5.yaml"
        path.write_text(content, encoding="utf-8")
    manifest = _manifest_study(tmp_path, f"rubric: {path.name}")
    db_path = tmp_path / "x.db"
    assert main(["--db", str(db_path), "import", str(manifest)]) == 1
    err = capsys.readouterr().err
    assert says in err and "rubric" in err
    assert "Traceback" not in err
    assert open_db(db_path).execute("SELECT count(*) FROM studies").fetchone() == (0,)


def test_a_dimension_may_be_rated_on_a_rubric_file(tmp_path):
    (tmp_path / "m").mkdir()
    _rubric(tmp_path / "m")
    manifest = _manifest_study(tmp_path, "rubrics:\n  count: ./vivid.yaml")
    db = open_db(tmp_path / "x.db")
    from concord.services import studies

    studies.import_manifest(db, manifest)
    study = study_store.get_study(db, "m")
    assert study.settings["rubrics"] == {"count": "vivid"}
    assert rubric_choice.rubric_for(study, "count").id == "vivid"
    assert rubric_choice.rubric_for(study, "color").id == "imagenhub-text-to-image"

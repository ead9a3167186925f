"""Which rubric an `import-ratings` checks against: given, declared inline, the study's, or
inferred; aliases (PQ for PR); per-task rubrics; Likert and PQ studies end to end."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from concord.cli import main
from concord.errors import ConcordError, InputError
from concord.rubrics import load_rubric_by_id
from concord.services import rubric_choice, studies
from concord.services.exports import labels
from concord.services.imports import rubric_fit
from concord.services.imports.ratings import import_ratings
from concord.services.metrics import scores as metric_scores
from concord.store import studies as study_store
from tests.foundation_helpers import make_folder_study, unchanged

pytestmark = pytest.mark.both_engines

HEADER = "prompt_id,model,rater,criterion,value\n"


def _csv(tmp_path: Path, body: str, name: str = "r.csv", header: str = HEADER) -> Path:
    path = tmp_path / name
    path.write_text(header + body, encoding="utf-8")
    return path


def _fails(db, study: str, path: Path, exc=InputError, **kw):
    with unchanged(db), pytest.raises(exc) as info:
        import_ratings(db, study, kw.pop("fmt", "csv"), path, **kw)
    return info.value


def likert_rows(seed: int = 3, prompts: int = 12, models=("m1", "m2", "m3")) -> list[str]:
    """1–5 Likert ratings by 2 to 5 raters per image, some images missing a rater."""
    rnd, rows = random.Random(seed), []
    raters = [f"r{i}" for i in range(5)]
    for p in range(prompts):
        for k, model in enumerate(models):
            for rater in rnd.sample(raters, rnd.randint(2, 5)):
                value = min(5, max(1, round(1 + k * 1.5 + rnd.gauss(0, 0.8))))
                rows.append(f"p{p},{model},{rater},likert,{value}")
    return rows


def test_a_likert_study_takes_the_likert_rubric_and_says_so(db, tmp_path):
    path = _csv(tmp_path, "\n".join(likert_rows()) + "\n")
    s = import_ratings(db, "lik", "csv", path)
    study = study_store.get_study(db, "lik")
    assert study.rubric == "likert-5"
    assert s.rubric.startswith("rubric likert-5 (inferred")
    assert "also fit: likert-7" in s.rubric
    assert rubric_choice.rubric_for(study).criteria[0].key == "likert"
    frame = labels.ratings(db, "lik")
    assert set(frame["criterion"]) == {"likert"}
    counts = frame.groupby(["prompt_id", "model"])["rater"].nunique()
    assert counts.min() == 2 and counts.max() == 5


def test_the_likert_and_pq_studies_run_through_stats_json(tmp_path, capsys):
    db_path = tmp_path / "e2e.db"
    lik = _csv(tmp_path, "\n".join(likert_rows()) + "\n", "likert.csv")
    pq = _csv(tmp_path, "".join(f"p{p},{m},{r},{c},{random.Random(p + i).choice((0, 0.5, 1))}\n"
                                for p in range(6) for i, m in enumerate(("a", "b"))
                                for r in ("x", "y", "z") for c in ("SC", "PQ")), "pq.csv")
    for study, path in (("lik", lik), ("pq", pq)):
        assert main(["--db", str(db_path), "import-ratings", "--study", study, "--format",
                     "csv", str(path)]) == 0
    out = capsys.readouterr().out
    assert "rubric likert-5" in out and "rubric imagenhub-released" in out
    criteria = {}
    for study in ("lik", "pq"):
        assert main(["--db", str(db_path), "stats", "--study", study, "--json",
                     "--n-boot", "20", "--n-perm", "20"]) == 0
        doc = json.loads(capsys.readouterr().out)
        criteria[study] = {r["criterion"] for r in doc["human"]}
    assert criteria["lik"] == {"likert"}  # no derived O without SC and PR
    assert {"SC", "PR", "O"} <= criteria["pq"]  # PQ stored as PR, so O is derived
    assert "PQ" not in criteria["pq"]


def test_pq_is_stored_under_pr_through_the_alias(db, tmp_path):
    import_ratings(db, "ih", "csv", _csv(tmp_path, "p1,A,ann,SC,1\np1,A,ann,PQ,0.5\n"))
    frame = labels.ratings(db, "ih")
    assert dict(zip(frame["criterion"], frame["value"], strict=True)) == {"SC": 1.0, "PR": 0.5}


def test_pq_and_pr_for_the_same_image_are_one_rating_twice(db, tmp_path):
    path = _csv(tmp_path, "p1,A,ann,PR,1\np1,A,ann,PQ,0.5\n")
    [p] = _fails(db, "ih", path).problems
    assert (p.row, p.field) == (3, "criterion")
    assert "second rating" in p.message


def test_given_rubric_and_unknown_rubric(db, tmp_path):
    path = _csv(tmp_path, "p1,A,ann,likert,3\n")
    s = import_ratings(db, "seven", "csv", path, rubric=["likert-7"])
    assert study_store.get_study(db, "seven").rubric == "likert-7"
    assert s.rubric == "rubric likert-7 (given)"
    err = _fails(db, "x", path, ConcordError, rubric=["likert5"])
    assert str(err).startswith("unknown rubric 'likert5' (did you mean 'likert-5'?")
    err = _fails(db, "x", path, ConcordError, rubric=["tiif-ranking"])
    assert "for rankings" in str(err)


def test_values_off_the_given_scale(db, tmp_path):
    path = _csv(tmp_path, "p1,A,ann,likert,3\np1,A,bob,likert,6\np2,A,bob,likert,6\n")
    [p] = _fails(db, "x", path, rubric=["likert-5"]).problems
    assert (p.row, p.field) == (3, "value")
    assert p.message == ("6 is not on the likert scale 1..5 of rubric likert-5 (and 1 more "
                         "row(s) like it)")


def test_an_inline_scale_is_stored_with_the_study_and_reloaded(db, tmp_path):
    path = _csv(tmp_path, "p1,A,ann,q,0.5\np1,A,ann,joy,7\n")
    s = import_ratings(db, "one-off", "csv", path, criteria=["q=0,0.5,1", "joy=1..7"])
    assert s.rubric == "inline scale q=0,0.5,1 joy=1..7 (given)"
    study = study_store.get_study(db, "one-off")
    assert study.rubric is None
    assert study.settings["criteria"] == [{"key": "q", "scale": [0, 0.5, 1]},
                                          {"key": "joy", "scale": [1, 2, 3, 4, 5, 6, 7]}]
    rubric = rubric_choice.rubric_for(study)
    assert [c.key for c in rubric.criteria] == ["q", "joy"]
    assert rubric.criterion("joy").values == (1, 2, 3, 4, 5, 6, 7)
    assert [lv.key for lv in rubric.criterion("q").levels] == ["1", "2", "3"]
    again = _csv(tmp_path, "p2,A,ann,joy,8\n", "b.csv")
    [p] = _fails(db, "one-off", again).problems  # later imports are checked against it
    assert p.field == "value" and "1..7" in p.message


@pytest.mark.parametrize(("spec", "message"), [
    ("likert=1..", "a range needs whole numbers"),
    ("likert=5..1", "a range goes up"),
    ("likert=1..1000", "2 to 101 levels"),
    ("likert", "expected KEY=LOW..HIGH"),
    ("1st=1..5", "a key starts with a letter"),
    ("q=0,0.5,0.5", "listed twice"),
    ("q=0,x", "expected KEY=LOW..HIGH"),
    ("q=1", "expected KEY=LOW..HIGH"),
])
def test_bad_inline_scales_are_one_line(db, tmp_path, spec, message):
    err = _fails(db, "x", _csv(tmp_path, "p1,A,ann,q,1\n"), ConcordError, criteria=[spec])
    assert message in str(err) and "\n" not in str(err)


def test_mixed_scales_in_one_file_fit_no_rubric(db, tmp_path):
    path = _csv(tmp_path, "p1,A,ann,likert,3\np1,A,bob,likert,5\np2,A,bob,likert,0.5\n")
    [p] = _fails(db, "mixed", path).problems
    assert (p.row, p.field) == (4, "value")
    assert "no rubric fits every row (closest: likert-5: 0.5 is not on its likert" in p.message
    assert p.message.endswith("choose one with --rubric ID, or declare the scale with "
                              "--criteria likert=0.5,3,5")


def test_unknown_criterion_names_suggest_an_inline_scale(db, tmp_path):
    [p] = _fails(db, "x", _csv(tmp_path, "p1,A,ann,beauty,1\np1,B,ann,beauty,4\n")).problems
    assert (p.row, p.field) == (2, "criterion")
    assert "no rubric has criteria named ['beauty']" in p.message
    assert "--criteria beauty=1,4" in p.message


def test_several_rubrics_that_fit_equally_are_named(db, tmp_path, monkeypatch):
    copy = load_rubric_by_id("likert-5").__class__(**{**vars(load_rubric_by_id("likert-5")),
                                                       "id": "my-likert"})
    shipped = rubric_choice.score_rubrics()
    monkeypatch.setattr(rubric_fit, "score_rubrics", lambda: [*shipped, copy])
    [p] = _fails(db, "x", _csv(tmp_path, "p1,A,ann,likert,3\n")).problems
    assert "several rubrics fit every row equally well (likert-5, my-likert)" in p.message


def test_a_scores_only_study_gets_its_rubric_at_the_first_ratings_import(db, tmp_path):
    scores = tmp_path / "s.csv"
    scores.write_text("prompt_id,model,metric,value\np1,A,vqascore,0.7\n")
    metric_scores.import_scores(db, "sc", "csv", scores)
    assert study_store.get_study(db, "sc").rubric is None
    s = import_ratings(db, "sc", "csv", _csv(tmp_path, "p1,A,ann,likert,4\n"))
    assert "likert-5 (inferred" in s.rubric
    assert study_store.get_study(db, "sc").rubric == "likert-5"
    [p] = _fails(db, "sc", _csv(tmp_path, "p1,A,bob,SC,1\n", "b.csv")).problems
    assert p.field == "criterion" and "not in rubric likert-5" in p.message


def test_a_study_keeps_its_rubric(db, tmp_path):
    studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=1))
    path = _csv(tmp_path, "p0,m1,ann,SC,2\n")
    assert import_ratings(db, "s", "csv", path, rubric=["imagenhub-text-to-image"]).added
    err = _fails(db, "s", path, ConcordError, rubric=["likert-5"])
    assert "already rates on imagenhub-text-to-image" in str(err)


def _tsv_folder(root: Path, tasks=("Text-Guided_IE", "Text-To-Image", "Other_Task"),
                cell="[2,1]") -> Path:
    for task in tasks:
        (root / task).mkdir(parents=True)
        (root / task / f"{task}_rater1.tsv").write_text(f"uid\tA\tB\ns0\t{cell}\t[0,0.5]\n")
    return root


def test_imagenhub_files_on_the_0_to_2_scale_get_a_rubric_per_task(db, tmp_path):
    s = import_ratings(db, "ih", "imagenhub", _tsv_folder(tmp_path / "tsv"))
    study = study_store.get_study(db, "ih")
    assert study.rubric == "imagenhub-general"
    assert study.settings["rubrics"] == {"Text-Guided_IE": "imagenhub-text-guided-editing",
                                         "Text-To-Image": "imagenhub-text-to-image"}
    assert "per task: Text-Guided_IE: imagenhub-text-guided-editing" in s.rubric
    assert rubric_choice.rubric_for(study, "Text-Guided_IE").id == "imagenhub-text-guided-editing"
    assert rubric_choice.rubric_for(study, "Other_Task").id == "imagenhub-general"
    image = db.execute("SELECT i.id FROM images i JOIN prompts p ON p.id = i.prompt_id"
                       " WHERE p.key = 'Text-To-Image/s0' LIMIT 1").fetchone()[0]
    assert rubric_choice.rubric_for_image(db, study, image).id == "imagenhub-text-to-image"
    assert set(labels.ratings(db, "ih")["criterion"]) == {"SC", "PR"}


def test_released_imagenhub_files_keep_the_released_scale(db, tmp_path):
    import_ratings(db, "rel", "imagenhub", _tsv_folder(tmp_path / "tsv", cell="[1,1]"))
    study = study_store.get_study(db, "rel")
    assert study.rubric == "imagenhub-released"
    assert "rubrics" not in study.settings  # no 3-step task rubrics exist


def test_rows_are_checked_against_their_dimensions_rubric(db, tmp_path):
    extra = "rubrics:\n  count: likert-5\n"
    studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=2, extra=extra))
    study = study_store.get_study(db, "s")
    assert study.settings["rubrics"] == {"count": "likert-5"}
    assert rubric_choice.rubric_for(study, "count").id == "likert-5"
    assert rubric_choice.rubric_for(study, "color").id == "imagenhub-text-to-image"
    ok = _csv(tmp_path, "p0,m1,ann,likert,5\np1,m1,ann,SC,2\n")  # p0: count, p1: color
    assert import_ratings(db, "s", "csv", ok).added == 2
    bad = _csv(tmp_path, "p0,m1,bob,SC,2\np1,m1,bob,likert,5\n", "b.csv")
    problems = _fails(db, "s", bad).problems
    assert {(p.row, p.field) for p in problems} == {(2, "criterion"), (3, "criterion")}
    assert any("not in rubric likert-5" in p.message for p in problems)


def test_a_dimension_rubric_can_be_given_on_the_command_line(db, tmp_path):
    header = "prompt_id,model,rater,criterion,value,dimension\n"
    path = _csv(tmp_path, "p1,A,ann,likert,2,a\np2,A,ann,binary,1,b\n", header=header)
    import_ratings(db, "two", "csv", path, rubric=["likert-5", "b=binary"])
    study = study_store.get_study(db, "two")
    assert (study.rubric, study.settings["rubrics"]) == ("likert-5", {"b": "binary"})
    err = _fails(db, "x", path, ConcordError, rubric=["likert-5", "likert-7"])
    assert "the default rubric is given twice" in str(err)


def test_observed_values_and_misfits():
    groups = [rubric_fit.Group(None, "likert", v, 1, 0, 2) for v in (1, 2, 5)]
    seen = rubric_fit.observed(groups)
    assert seen == {"likert": {1, 2, 5}}
    assert rubric_fit.misfit(load_rubric_by_id("likert-5"), seen) is None
    assert rubric_fit.misfit(load_rubric_by_id("binary"), seen)[2] == (
        "it has no criterion 'likert'")


def test_the_cli_takes_inline_scales_before_the_path(tmp_path, capsys):
    path = _csv(tmp_path, "p1,A,ann,q,0.5\np1,A,ann,joy,7\n")
    db_path = tmp_path / "cli.db"
    assert main(["--db", str(db_path), "import-ratings", "--study", "one", "--format", "csv",
                 "--criteria", "q=0,0.5,1 joy=1..7", str(path)]) == 0
    assert "inline scale q=0,0.5,1 joy=1..7 (given)" in capsys.readouterr().out
    assert main(["--db", str(db_path), "import-ratings", "--study", "two", "--format", "csv",
                 "--criteria", "q=0..", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: --criteria 'q=0..': a range needs whole numbers")
    assert err.count("\n") == 1


def test_the_rating_screen_uses_each_images_own_rubric(db, tmp_path):
    """A study with ``rubrics:`` shows (and checks) each image's dimension's rubric."""
    from concord.services.labelling import rating
    from concord.store.raters import rater_for_token

    extra = "rubrics:\n  count: likert-5\n"
    studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=2, extra=extra))
    (invite,) = studies.invite(db, "s", ["ann"], "http://x")
    rater = rater_for_token(db, invite.url.split("token=")[1]).id
    seen = {}
    while (item := rating.next_item(db, "s", rater)) is not None:
        dimension = db.execute("SELECT p.dimension FROM images i JOIN prompts p"
                               " ON p.id = i.prompt_id WHERE i.id = ?",
                               [item.image_id]).fetchone()[0]
        seen[dimension] = item.rubric.id
        values = {c.key: c.values[-1] for c in item.rubric.criteria}
        other = {"likert": 5} if item.rubric.id != "likert-5" else {"SC": 1, "PR": 1}
        with pytest.raises(ConcordError, match=r"choose a score|unknown criteria"):
            rating.submit(db, "s", rater, item.image_id, other, submission=item.submission)
        assert rating.submit(db, "s", rater, item.image_id, values,
                             submission=item.submission).stored
    assert seen == {"count": "likert-5", "color": "imagenhub-text-to-image"}
    assert set(labels.ratings(db, "s")["criterion"]) == {"likert", "SC", "PR"}

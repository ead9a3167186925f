"""`import-ratings`: tidy CSV and ImagenHub TSVs; validation, duplicates, scale, revisions."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from concord.errors import InputError
from concord.rubrics.inline import InlineScaleError, parse_criteria
from concord.services import studies
from concord.services.exports import labels
from concord.services.imports.ratings import import_ratings
from concord.store import studies as study_store
from tests.foundation_helpers import make_folder_study, shared_path, unchanged

pytestmark = pytest.mark.both_engines

HEADER = "prompt_id,model,rater,criterion,value,sample,seconds\n"


def _csv(tmp_path: Path, body: str, name: str = "r.csv", header: str = HEADER) -> Path:
    path = tmp_path / name
    path.write_text(header + body, encoding="utf-8")
    return path


def _fails(db, study: str, path: Path, fmt: str = "csv") -> InputError:
    with unchanged(db), pytest.raises(InputError) as info:
        import_ratings(db, study, fmt, path)
    return info.value


@pytest.fixture
def scored(db, tmp_path):
    """A manifest study 's' (rubric imagenhub-text-to-image, scale 0/0.5/1/2)."""
    studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=2))
    return db


def test_csv_creates_a_ratings_only_study(db, tmp_path):
    path = _csv(tmp_path, "p1,A,ann,SC,1,0,3.5\np1,A,ann,PR,0.5,0,3.5\np2,B,ben,SC,0,1,\n")
    s = import_ratings(db, "new", "csv", path)
    assert (s.created_study, s.rows, s.added, s.unchanged) == (True, 3, 3, 0)
    study = study_store.get_study(db, "new")
    assert study.root is None
    assert study.rubric == "imagenhub-released"
    assert study.settings["layout"] == "ratings-only (csv)"
    assert db.execute("SELECT COUNT(*) FROM images WHERE path IS NULL").fetchone()[0] == 2
    frame = labels.ratings(db, "new").sort_values(["prompt_id", "criterion"])
    assert frame["sample"].tolist() == [0, 0, 1]
    assert frame["seconds"].tolist()[:2] == [3.5, 3.5]
    actions = {r[0] for r in db.execute("SELECT action FROM ratings").fetchall()}
    assert actions == {"import"}
    members = db.execute("SELECT COUNT(*) FROM study_raters").fetchone()[0]
    assert members == 2


def test_new_study_rubric_follows_the_values(db, tmp_path):
    import_ratings(db, "big", "csv", _csv(tmp_path, "p1,A,ann,SC,2,0,\n"))
    assert study_store.get_study(db, "big").rubric == "imagenhub-general"


def test_csv_into_an_existing_study(scored, tmp_path):
    path = _csv(tmp_path, "p0,m1,ann,SC,2,0,\np0,m1,ann,PR,1,0,\n")
    s = import_ratings(scored, "s", "csv", path)
    assert (s.created_study, s.added) == (False, 2)
    assert labels.ratings(scored, "s")["value"].tolist() == [1.0, 2.0]  # PR, SC


def test_unknown_target_in_a_manifest_study(scored, tmp_path):
    path = _csv(tmp_path, "p0,m1,ann,SC,2,0,\np9,m1,ann,SC,2,0,\n")
    p = _fails(scored, "s", path).problems[0]
    assert (p.file, p.row, p.field) == (str(path), 3, "prompt_id")
    assert "'p9'" in p.message


def test_every_bad_row_is_named(db, tmp_path):
    path = _csv(tmp_path, "p1,A,,SC,1,0,\np1,A,ann,SC,abc,0,\np1,B,ann,SC,nan,0,\n"
                          "p2,A,ann,SC,1,x,\np2,B,ann,SC,1,0,fast\n")
    err = _fails(db, "new", path)
    got = {(p.row, p.field) for p in err.problems}
    assert got == {(2, "rater"), (3, "value"), (4, "value"), (5, "sample"), (6, "seconds")}
    assert all(p.file == str(path) for p in err.problems)


def test_missing_column(db, tmp_path):
    path = _csv(tmp_path, "p1,A,ann,1\n", header="prompt_id,model,rater,value\n")
    p = _fails(db, "new", path).problems[0]
    assert p.row == 1
    assert "['criterion']" in p.message


def test_latin1_ratings_file(db, tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes((HEADER + "p1,A,Zoë,SC,1,0,\n").encode("latin-1"))
    p = _fails(db, "new", path).problems[0]
    assert p.row == 2
    assert "not UTF-8" in p.message


def test_header_only_file(db, tmp_path):
    assert "no ratings found" in str(_fails(db, "new", _csv(tmp_path, "")))


def test_duplicate_ratings_are_refused(scored, tmp_path):
    path = _csv(tmp_path, "p0,m1,ann,SC,1,0,\np0,m1,ann,PR,1,0,\np0,m1,ann,SC,2,0,\n")
    p = _fails(scored, "s", path).problems[0]
    assert (p.row, p.field) == (4, "criterion")
    assert "second rating" in p.message


@pytest.mark.parametrize(("row", "field"), [("p0,m1,ann,SC,0.7,0,", "value"),
                                            ("p0,m1,ann,SC,3,0,", "value"),
                                            ("p0,m1,ann,XX,1,0,", "criterion")])
def test_values_off_the_rubric_are_refused(scored, tmp_path, row, field):
    path = _csv(tmp_path, "p0,m1,ann,PR,1,0,\n" + row + "\n")
    p = _fails(scored, "s", path).problems[0]
    assert (p.file, p.row, p.field) == (str(path), 3, field)


def test_off_scale_value_does_not_leave_a_new_study_behind(db, tmp_path):
    path = _csv(tmp_path, "p1,A,ann,SC,1,0,\np1,A,ann,PR,1.5,0,\n")
    [p] = _fails(db, "new", path).problems
    assert (p.file, p.row, p.field) == (str(path), 3, "value")
    assert "no rubric fits every row" in p.message
    assert "imagenhub-released: 1.5 is not on its PR scale [0, 0.5, 1]" in p.message
    assert study_store.list_study_names(db) == []


def test_reimport_changes_nothing(scored, tmp_path):
    path = _csv(tmp_path, "p0,m1,ann,SC,1,0,\np0,m1,ann,PR,1,0,\n")
    import_ratings(scored, "s", "csv", path)
    with unchanged(scored):
        s = import_ratings(scored, "s", "csv", path)
    assert (s.added, s.changed, s.unchanged) == (0, 0, 2)


def test_changed_value_becomes_a_new_revision(scored, tmp_path):
    import_ratings(scored, "s", "csv", _csv(tmp_path, "p0,m1,ann,SC,1,0,\n"))
    s = import_ratings(scored, "s", "csv", _csv(tmp_path, "p0,m1,ann,SC,2,0,\n", "b.csv"))
    assert (s.added, s.changed) == (0, 1)
    revs = scored.execute("SELECT revision, value, action FROM ratings ORDER BY revision")
    assert revs.fetchall() == [(1, 1.0, "import"), (2, 2.0, "import")]
    assert labels.ratings(scored, "s")["value"].tolist() == [2.0]


def test_neutralised_cells_are_read_back(db, tmp_path):
    path = _csv(tmp_path, "'=p1,A,'@ann,SC,1,0,\n")
    import_ratings(db, "new", "csv", path)
    row = labels.ratings(db, "new").iloc[0]
    assert (row["prompt_id"], row["rater"]) == ("=p1", "@ann")


def test_unknown_format(db, tmp_path):
    with pytest.raises(Exception, match="unknown ratings format"):
        import_ratings(db, "x", "xlsx", tmp_path / "r.xlsx")


# --- ImagenHub TSVs ----------------------------------------------------------------------

@pytest.mark.shared
def test_one_imagenhub_tsv(db):
    path = shared_path("datasets", "imagenhub_human_ratings", "human_ratings", "Text-To-Image",
                       "Text-To-Image_rater2.tsv")
    s = import_ratings(db, "t2i", "imagenhub", path)
    lines = path.read_text().splitlines()
    models = lines[0].split("\t")[1:]
    assert s.added == (len(lines) - 1) * len(models) * 2
    frame = labels.ratings(db, "t2i")
    assert set(frame["rater"]) == {"rater2"}
    assert set(frame["dimension"]) == {"Text-To-Image"}
    first = frame[(frame["prompt_id"] == "Text-To-Image/sample_0.jpg")
                  & (frame["model"] == models[0])]
    cell = lines[1].split("\t")[1].strip("[]").split(",")
    assert dict(zip(first["criterion"], first["value"], strict=True)) == {
        "SC": float(cell[0]), "PR": float(cell[1])}


def test_bad_imagenhub_cell_is_named(db, tmp_path):
    path = tmp_path / "Text-To-Image" / "Text-To-Image_rater1.tsv"
    path.parent.mkdir()
    path.write_text("uid\tA\tB\ns0.jpg\t[1,0.5]\t[0.5,x]\ns1.jpg\t[1,1]\t[0.3,1]\n")
    err = _fails(db, "ih", tmp_path, fmt="imagenhub")
    got = {(p.file, p.row, p.field) for p in err.problems}
    assert got == {(str(path), 2, "B"), (str(path), 3, "B")}


def test_imagenhub_folder_without_tsv_files(db, tmp_path):
    assert "no <Task>/<Task>_rater<N>.tsv files" in str(_fails(db, "ih", tmp_path, "imagenhub"))


# --- every field checked, every problem counted ------------------------------------------

@pytest.mark.parametrize(("row", "field", "message"), [
    ("p1,A,ann,SC,1,0,-2", "seconds", "must be ≥ 0"),
    ("p1,A,ann,SC,1,-1,", "sample", "not a sample index"),
    ("p1,A,ann,SC,1,99999999999999999999,", "sample", "not a sample index"),
    ("p1,A,ann,SC,1,1_0,", "sample", "not a sample index"),
    ("p1,A,ann,SC,inf,0,", "value", "not a finite number"),
    ("p1,A,ann,SC,1_0,0,", "value", "not a number"),
    ("p1,A,ann,SC,1,0,nan", "seconds", "not a finite number"),
    ('"p\x001",A,ann,SC,1,0,', "prompt_id", "NUL, newline or carriage return"),
    ('p1,"A\nB",ann,SC,1,0,', "model", "NUL, newline or carriage return"),
    ("p1,A, ,SC,1,0,", "rater", "empty value"),
    ("p1,A,ann,,1,0,", "criterion", "empty value"),
    ("p1,A,ann,SC,,0,", "value", "empty value"),
    ("p1,A,ann," + "C" * 1001 + ",1,0,", "criterion", "longer than 1000 characters"),
])
def test_a_bad_field_is_one_line_with_file_row_and_field(db, tmp_path, row, field, message):
    path = _csv(tmp_path, "p0,A,ann,SC,1,0,2.5\n" + row + "\n")
    err = _fails(db, "new", path)
    [p] = err.problems
    assert (p.file, p.row, p.field) == (str(path), 3, field)
    assert message in p.message
    assert "\n" not in str(err) and str(err).endswith("(nothing was imported)")
    assert study_store.list_study_names(db) == []


def test_bytes_that_are_not_utf8_are_named_with_their_field(db, tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes((HEADER + "p1,A,ann,SC,1,0,\n").encode() + b"p2,A,Zo\xeb,SC,1,0,\n")
    [p] = _fails(db, "new", path).problems
    assert (p.row, p.field) == (3, "rater")
    assert "not UTF-8" in p.message


def test_every_problem_is_counted_and_the_first_50_are_listed(db, tmp_path):
    path = _csv(tmp_path, "".join(f"p{i},A,ann,SC,x{i},0,\n" for i in range(1600)))
    err = _fails(db, "new", path)
    assert err.total == 1600
    assert len(err.problems) == 50
    assert [p.row for p in err.problems] == list(range(2, 52))
    assert str(err).startswith("1600 problem(s) found, nothing was imported; the first 50 of "
                               "1600:")


def test_rows_of_a_ranking_are_rankings_and_other_kinds_refused(db, tmp_path):
    header = "kind,prompt_id,model,rater,criterion,value,rank\n"
    ok = _csv(tmp_path, "rating,p1,A,ann,SC,1,\nranking,p1,A,ann,overall,,1\n"
                        "ranking,p1,B,ann,overall,,2\n", header=header)
    done = import_ratings(db, "new", "csv", ok)
    assert done.rows == 1 and done.labels.rankings == 1
    no_rank = _csv(tmp_path, "rating,p1,A,ann,SC,1,\nranking,p1,A,ann,overall,,\n", "n.csv",
                   header)
    [p] = _fails(db, "other", no_rank).problems
    assert (p.row, p.field, p.message) == (3, "rank", "empty value")
    bad = _csv(tmp_path, "rating,p1,A,ann,SC,1,\nvote,p1,B,ann,SC,1,\n", "b.csv", header)
    [p] = _fails(db, "other", bad).problems
    assert (p.row, p.field) == (3, "kind")


def test_columns_named_twice_are_refused(db, tmp_path):
    path = _csv(tmp_path, "p1,A,ann,SC,1,1\n", header="prompt_id,model,rater,criterion,value,"
                                                      "value\n")
    [p] = _fails(db, "new", path).problems
    assert p.row == 1 and "['value'] appear twice" in p.message


def test_a_pipe_is_refused_before_it_is_opened(db, tmp_path):
    fifo = tmp_path / "ratings.csv"
    os.mkfifo(fifo)  # opening it for reading would block for ever
    [p] = _fails(db, "new", fifo).problems
    assert "not a regular file" in p.message


def test_a_csv_export_with_prompt_texts_over_several_lines_reads_back(db, tmp_path):
    header = "study,kind,prompt_id,prompt,model,sample,rater,criterion,value\n"
    path = _csv(tmp_path, 's,rating,p1,"two\nlines",A,0,ann,SC,1\n'
                          's,rating,p2,one,A,0,ann,SC,x\n', header=header)
    [p] = _fails(db, "new", path).problems
    assert (p.row, p.field) == (4, "value")  # the row's own line, after the two-line one


def test_dimensions_of_one_prompt_must_agree(db, tmp_path):
    header = "prompt_id,model,rater,criterion,value,dimension\n"
    path = _csv(tmp_path, "p1,A,ann,SC,1,color\np1,B,ann,SC,1,count\n", header=header)
    [p] = _fails(db, "new", path).problems
    assert (p.row, p.field) == (3, "dimension")
    assert "'count'" in p.message


def test_crlf_files_and_line_breaks_in_quoted_cells_keep_row_numbers(db, tmp_path):
    header = "study,kind,prompt_id,prompt,model,sample,rater,criterion,value\r\n"
    path = tmp_path / "r.csv"
    path.write_bytes((header + 's,rating,p1,"a\r\nb\rc",A,0,ann,SC,1\r\n'
                      's,rating,p2,one,A,0,ann,SC,x\r\n').encode())
    [p] = _fails(db, "new", path).problems
    assert (p.row, p.field) == (5, "value")  # row 2 spans lines 2-4 (CRLF, then a bare CR)


def test_a_header_of_100000_columns_gets_one_short_line(db, tmp_path):
    wide = ",".join(f"c{i}" for i in range(100_000))
    [p] = _fails(db, "new", _csv(tmp_path, "", header=wide + "\n")).problems
    assert "missing column(s)" in p.message and "found 100000 columns, the first 20:" in p.message
    assert len(p.message) < 500
    twice = "prompt_id,model,rater,criterion,value," + ",".join(["x", "y"] * 50_000)
    [p] = _fails(db, "new", _csv(tmp_path, "", header=twice + "\n")).problems
    assert "column(s) ['x', 'y'] appear twice" in p.message and len(p.message) < 500


def test_a_prompt_with_many_rows_and_a_dimension_imports_whole(db, tmp_path):
    # 3 prompts x 40 models x 25 raters: 1,000 rows per prompt, each with its dimension.
    rows = "".join(f"p{p},m{m},r{r},SC,{(p + m + r) % 2},d{p}\n"
                   for p in range(3) for m in range(40) for r in range(25))
    header = "prompt_id,model,rater,criterion,value,dimension\n"
    summary = import_ratings(db, "wide", "csv", _csv(tmp_path, rows, header=header))
    assert summary.added == 3_000
    bad = rows + "p1,m0,extra,SC,1,d2\n"
    [p] = _fails(db, "wide2", _csv(tmp_path, bad, name="bad.csv", header=header)).problems
    assert (p.row, p.field) == (3_002, "dimension")


def test_a_gzip_file_is_named_as_not_utf8_text_before_its_columns(db, tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_bytes(gzip.compress((HEADER + "p1,A,ann,SC,1\n").encode()))
    [p] = _fails(db, "new", path).problems
    assert p.row == 1 and p.message.startswith("not UTF-8 text: expected a CSV saved as UTF-8")
    assert "found" not in p.message


def test_criterion_names_that_cannot_be_criteria_keys_get_a_hint_that_works(db, tmp_path):
    # another lab's names: a space and brackets, which --criteria refuses as keys
    body = "".join(f'p{i},m1,ann,"Overall quality (1-7)",{i % 7 + 1},0,\n' for i in range(9))
    path = _csv(tmp_path, body)
    [p] = _fails(db, "lab", path).problems
    assert (p.file, p.row, p.field) == (str(path), 2, "criterion")
    assert "['Overall quality (1-7)'] as aliases" in p.message
    assert "--criteria Overall" not in p.message  # a command that would be refused
    with pytest.raises(InlineScaleError):
        parse_criteria(["Overall quality (1-7)=1..7"])
    assert study_store.list_study_names(db) == []


def test_criterion_names_that_can_be_keys_get_the_criteria_hint(db, tmp_path):
    body = "".join(f"p{i},m1,ann,overall_quality,{i % 7 + 1},0,\n" for i in range(9))
    [p] = _fails(db, "lab", _csv(tmp_path, body)).problems
    assert "declare the scale with --criteria overall_quality=1..7" in p.message

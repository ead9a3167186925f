"""Bad input to `import MANIFEST`: each kind is refused, named (file, row, field) and
leaves the database exactly as it was (checked by ``import_fails``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from concord.errors import InputError
from concord.services import studies
from tests.foundation_helpers import (  # noqa: F401 - the fixtures study, db
    bad_study,
    good_db,
    import_fails,
    make_folder_study,
    png_header_only,
    problem_text,
    shared_path,
    unchanged,
    write_png,
)

pytestmark = pytest.mark.both_engines

TINY = (8, 8)


def _img(study: Path, model: str, name: str) -> Path:
    return study.parent / "images" / model / name


def _only(err: InputError) -> str:
    assert len(err.problems) == 1, problem_text(err)
    return str(err.problems[0])


def _manifest(tmp_path: Path, text: str, name: str = "m.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- image files ---------------------------------------------------------------------

def test_truncated_image(db, study):
    f = _img(study, "m1", "p0.png")
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    p = import_fails(db, study).problems[0]
    assert (p.file, p.field) == (str(f), "image")
    assert "truncated" in p.message


def test_text_file_named_png(db, study):
    f = _img(study, "m2", "p1.png")
    f.write_text("this is not an image")
    p = import_fails(db, study).problems[0]
    assert p.file == str(f)
    assert "not a readable image" in p.message


def test_empty_image_file(db, study):
    f = _img(study, "m1", "p2.png")
    f.write_bytes(b"")
    assert _only(import_fails(db, study)).startswith(f"{f}, field 'image': empty file")


@pytest.mark.parametrize("fmt", ["GIF", "BMP"])
def test_unsupported_format_named_png(db, study, fmt):
    f = _img(study, "m1", "p0.png")
    Image.new("RGB", TINY).save(f, format=fmt)
    p = import_fails(db, study).problems[0]
    assert p.file == str(f)
    assert f"unsupported image format {fmt}" in p.message


def test_image_above_manifest_pixel_limit(db, study):
    study.write_text(study.read_text() + "max_pixels: 1000\n")
    err = import_fails(db, study)
    assert len(err.problems) == 6  # every 32×32 image, all reported at once
    assert "32×32 = 1,024 pixels, above the limit of 1,000" in err.problems[0].message
    assert "max_pixels" in err.problems[0].message


def test_png_header_declaring_a_huge_size(db, study):
    bomb = png_header_only(_img(study, "m1", "p0.png"), 100_000, 100_000)
    big = png_header_only(_img(study, "m2", "p0.png"), 9_000, 9_000)
    err = import_fails(db, study)
    by_file = {p.file: p.message for p in err.problems}
    assert "image too large" in by_file[str(bomb)]
    assert "above the limit of 64,000,000" in by_file[str(big)]


def test_changed_image_since_import(db, tmp_path):
    manifest = make_folder_study(tmp_path / "s", prompts=1)
    studies.import_manifest(db, manifest)
    f = tmp_path / "s" / "images" / "m1" / "p0.png"
    write_png(f, color=(1, 2, 3))
    write_png(tmp_path / "s" / "images" / "m1" / "p0_1.png")  # a new file is not added either
    p = import_fails(db, manifest).problems[0]
    assert (p.file, p.field) == (str(f), "sha256")
    assert "changed since it was imported" in p.message


# --- paths ----------------------------------------------------------------------------

def test_source_image_path_traversal(db, study, tmp_path):
    write_png(tmp_path / "secret.png", size=TINY)
    prompts = study.parent / "prompts.csv"
    prompts.write_text("prompt_id,prompt,source_image\np0,a,../../secret.png\n")
    p = import_fails(db, study).problems[0]
    assert (p.file, p.row, p.field) == (str(prompts), 2, "source_image")
    assert "leaves the study root" in p.message


def test_symlinked_image_escaping_the_root(db, study, tmp_path):
    outside = write_png(tmp_path / "outside.png", size=TINY)
    link = _img(study, "m1", "p0.png")
    link.unlink()
    link.symlink_to(outside)
    p = import_fails(db, study).problems[0]
    assert p.file == str(link)
    assert f"resolves to {outside}" in p.message


def test_symlinked_model_folder_escaping_the_root(db, study, tmp_path):
    write_png(tmp_path / "elsewhere" / "p0.png", size=TINY)
    (study.parent / "images" / "m3").symlink_to(tmp_path / "elsewhere")
    assert "leaves the study root" in _only(import_fails(db, study))


def test_symlink_inside_the_root_is_fine(db, study):
    link = _img(study, "m2", "p0_1.png")
    link.symlink_to(_img(study, "m2", "p0.png"))
    assert studies.import_manifest(db, study).images_added == 7


def test_missing_root_folder(db, study):
    study.write_text(study.read_text().replace("root: images", "root: imgz"))
    p = import_fails(db, study).problems[0]
    assert (p.file, p.field) == (str(study.resolve()), "root")
    assert "imgz" in p.message


# --- manifest -------------------------------------------------------------------------

def test_manifest_not_found(db, tmp_path):
    p = import_fails(db, tmp_path / "nope.yaml").problems[0]
    assert p.file == str(tmp_path / "nope.yaml")
    assert p.message == "file not found"


def test_malformed_yaml(db, tmp_path):
    m = _manifest(tmp_path, "name: x\nlayout: folder\nmodels: [a, b\n")
    p = import_fails(db, m).problems[0]
    assert p.file == str(m)
    assert "malformed YAML" in p.message
    assert p.row == 4


def test_malformed_json_manifest(db, tmp_path):
    m = _manifest(tmp_path, '{\n  "name": "x",\n}\n', "m.json")
    p = import_fails(db, m).problems[0]
    assert (p.file, p.row) == (str(m), 3)
    assert "malformed JSON" in p.message


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", ""])
def test_manifest_root_not_a_mapping(db, tmp_path, text):
    m = _manifest(tmp_path, text)
    assert "the manifest must be a mapping" in _only(import_fails(db, m))


def test_unknown_manifest_key(db, study):
    study.write_text(study.read_text() + "raters_per_iten: 3\n")
    p = import_fails(db, study).problems[0]
    assert (p.file, p.field) == (str(study), "raters_per_iten")
    assert "unknown key" in p.message


def test_every_problem_of_a_manifest_and_its_files_in_one_pass(db, study):
    """Manifest keys, the rubric and the files it names are all checked in one run (they
    used to come in three: keys, then rubric and files, then what the files hold)."""
    text = study.read_text().replace("raters_per_item: 2", "raters_per_item: 0")
    study.write_text(text + "rubric: likert-55\nprotocl: score\ncrowd: {items_per_rater: -1}\n")
    prompts = study.parent / "prompts.csv"
    prompts.write_text(prompts.read_text() + "p1,again,count\n")
    _img(study, "m1", "p0.png").write_bytes(b"not a png")
    with unchanged(db):
        err = import_fails(db, study)
    where = {(Path(p.file).name, p.field) for p in err.problems}
    assert {("study.yaml", "raters_per_item"), ("study.yaml", "rubric"),
            ("study.yaml", "protocl"), ("prompts.csv", "prompt_id"),
            ("p0.png", "image")} <= where, problem_text(err)
    assert any(f.startswith("crowd") for _, f in where), problem_text(err)
    text = problem_text(err)
    assert "did you mean 'likert-5'?" in text and "did you mean 'protocol'?" in text


def test_files_are_not_read_when_the_manifest_cannot_name_them(db, study):
    study.write_text(study.read_text().replace("layout: folder", "layout: folders")
                     + "rubric: likert-55\n")
    err = import_fails(db, study)
    assert {p.field for p in err.problems} == {"layout", "rubric"}, problem_text(err)


def test_unknown_layout(db, study):
    study.write_text(study.read_text().replace("layout: folder", "layout: flat"))
    p = import_fails(db, study).problems[0]
    assert p.field == "layout"
    assert "'flat'" in p.message


def test_wrong_protocol(db, study):
    study.write_text(study.read_text().replace("protocol: score", "protocol: vote"))
    p = import_fails(db, study).problems[0]
    assert p.field == "protocol"
    assert "'vote'" in p.message


@pytest.mark.parametrize("value", ["0", "-2", "three", "1.5", "true"])
def test_bad_raters_per_item(db, study, value):
    study.write_text(study.read_text().replace("raters_per_item: 2", f"raters_per_item: {value}"))
    assert _only(import_fails(db, study)).startswith(f"{study}, field 'raters_per_item'")


def test_missing_study_name(db, study):
    study.write_text(study.read_text().replace("name: bad\n", ""))
    assert import_fails(db, study).problems[0].field == "name"


def test_unknown_rubric(db, study):
    study.write_text(study.read_text() + "rubric: imagenhub-nope\n")
    p = import_fails(db, study).problems[0]
    assert p.field == "rubric"
    assert "imagenhub-nope" in p.message


def test_manifest_problems_are_all_reported(db, study):
    study.write_text(study.read_text().replace("protocol: score", "protocol: vote")
                     + "colour: red\nmax_pixels: 0\nranking: [1]\n")
    fields = {p.field for p in import_fails(db, study).problems}
    assert fields == {"protocol", "colour", "max_pixels", "ranking"}


# --- prompt tables ----------------------------------------------------------------------

def test_missing_prompts_file(db, study):
    study.write_text(study.read_text().replace("prompts: prompts.csv", "prompts: nope.csv"))
    p = import_fails(db, study).problems[0]
    assert p.field == "prompts"
    assert "nope.csv" in p.message


def test_folder_layout_without_prompts_key(db, study):
    study.write_text(study.read_text().replace("prompts: prompts.csv\n", ""))
    assert "needs a prompts file" in _only(import_fails(db, study))


def test_duplicate_prompt_id(db, study):
    prompts = study.parent / "prompts.csv"
    prompts.write_text("prompt_id,prompt\np0,a\np1,b\np2,c\np1,again\n")
    p = import_fails(db, study).problems[0]
    assert (p.file, p.row, p.field) == (str(prompts), 5, "prompt_id")
    assert "duplicate prompt id 'p1' (first on row 3)" in p.message


def test_empty_prompt(db, study):
    prompts = study.parent / "prompts.csv"
    prompts.write_text("prompt_id,prompt\np0,a\np1,   \np2,c\n")
    p = import_fails(db, study).problems[0]
    assert (p.file, p.row, p.field, p.message) == (str(prompts), 3, "prompt", "empty prompt")


def test_malformed_csv_unclosed_quote(db, study):
    prompts = study.parent / "prompts.csv"
    prompts.write_text('prompt_id,prompt\np0,"a photo\np1,b\n')
    p = import_fails(db, study).problems[0]
    assert p.file == str(prompts)
    assert "malformed CSV" in p.message
    assert p.row is not None


def test_latin1_csv(db, study):
    prompts = study.parent / "prompts.csv"
    prompts.write_bytes("prompt_id,prompt\np0,café\n".encode("latin-1"))
    text = _only(import_fails(db, study))
    assert text.startswith(f"{prompts}, row 2: not UTF-8")
    assert "0xe9" in text


def test_csv_missing_column(db, study):
    prompts = study.parent / "prompts.csv"
    prompts.write_text("id,text\np0,a\n")
    p = import_fails(db, study).problems[0]
    assert (p.file, p.row) == (str(prompts), 1)
    assert "missing column(s)" in p.message


def test_ragged_csv_row(db, study):
    prompts = study.parent / "prompts.csv"
    prompts.write_text("prompt_id,prompt\np0,a\np1,b,extra\np2,c\n")
    p = import_fails(db, study).problems[0]
    assert (p.row, p.message) == (3, "expected 2 cells, found 3")


def test_bad_atom_count(db, study):
    prompts = study.parent / "prompts.csv"
    prompts.write_text("prompt_id,prompt,atom_count\np0,a,3\np1,b,many\np2,c,\n")
    p = import_fails(db, study).problems[0]
    assert (p.row, p.field) == (3, "atom_count")


def test_changed_prompt_text(db, tmp_path):
    manifest = make_folder_study(tmp_path / "s", prompts=1)
    studies.import_manifest(db, manifest)
    (tmp_path / "s" / "prompts.csv").write_text("prompt_id,prompt\np0,a different text\n")
    p = import_fails(db, manifest).problems[0]
    assert p.field == "prompt p0"
    assert "differs" in p.message


# --- folder contents ---------------------------------------------------------------------

def test_unknown_model_folder(db, study):
    study.write_text(study.read_text() + "models: [m1]\n")
    p = import_fails(db, study).problems[0]
    assert (p.file, p.field) == (str(study.parent / "images" / "m2"), "models")
    assert "unknown model 'm2'" in p.message


def test_declared_model_without_folder(db, study):
    study.write_text(study.read_text() + "models: [m1, m2, m9]\n")
    p = import_fails(db, study).problems[0]
    assert p.file == str(study.parent / "images" / "m9")
    assert "no folder" in p.message


def test_file_name_matching_no_prompt(db, study):
    f = write_png(_img(study, "m1", "q7.png"), size=TINY)
    p = import_fails(db, study).problems[0]
    assert (p.file, p.field) == (str(f), "prompt_id")
    assert "matches no prompt id" in p.message


def test_two_images_for_one_prompt_and_sample(db, study):
    write_png(_img(study, "m1", "p1.jpg"), size=TINY, fmt="JPEG")
    p = import_fails(db, study).problems[0]
    assert p.file == str(_img(study, "m1", "p1.png"))
    assert "also p1.jpg" in p.message


def test_non_image_file_in_model_folder(db, study):
    (_img(study, "m2", "notes.txt")).write_text("x")
    assert "not an image file name" in _only(import_fails(db, study))


def test_every_bad_file_is_reported(db, study):
    for name in ("p0.png", "p2.png"):
        _img(study, "m1", name).write_text("junk")
    _img(study, "m2", "p1.png").write_bytes(b"")
    write_png(_img(study, "m2", "zz.png"), size=TINY)
    err = import_fails(db, study)
    assert len(err.problems) == 4
    assert {Path(p.file).name for p in err.problems} == {"p0.png", "p2.png", "p1.png", "zz.png"}
    assert str(err).startswith("4 problem(s) found, nothing was imported")


# --- gold and ranking -----------------------------------------------------------------

def test_gold_with_unknown_model(db, study):
    gold = study.parent / "gold.csv"
    gold.write_text("prompt_id,model,criterion,expected\np0,m1,SC,1\np1,m7,SC,0\n")
    study.write_text(study.read_text() + "gold: gold.csv\n")
    p = import_fails(db, study).problems[0]
    assert (p.file, p.row, p.field) == (str(gold), 3, "model")
    assert "'m7'" in p.message


@pytest.mark.parametrize("n_models", [1, 17])
def test_ranking_needs_2_to_16_models(db, tmp_path, n_models):
    models = tuple(f"m{i}" for i in range(n_models))
    manifest = make_folder_study(tmp_path / "r", prompts=1, models=models, protocol="rank")
    p = import_fails(db, manifest).problems[0]
    assert p.field == "models"
    assert f"the study has {n_models}" in p.message


def test_unknown_ranking_prompt_id(db, study):
    study.write_text(study.read_text().replace("protocol: score", "protocol: rank")
                     + "ranking:\n  prompts: [p0, p8]\n")
    p = import_fails(db, study).problems[0]
    assert p.field == "ranking.prompts"
    assert "'p8'" in p.message


def test_unknown_ranking_key(db, study):
    study.write_text(study.read_text() + "ranking:\n  shuffle: true\n")
    assert import_fails(db, study).problems[0].field == "ranking.shuffle"


# --- benchmark layouts ---------------------------------------------------------------

def _paircomp(tmp_path: Path, names: list[str]) -> Path:
    root = tmp_path / "pc"
    root.mkdir()
    (root / "PairComp.json").write_text(json.dumps(
        [{"category": "Color", "caption1": "a red cup", "caption2": "a blue cup"}]))
    for name in names:
        write_png(root / "imgs" / "m1" / name, size=TINY)
    return _manifest(root, "name: pc\nlayout: paircomp\nroot: imgs\nprompts: PairComp.json\n")


@pytest.mark.parametrize("name", ["0-1-0.png", "0_2_0.png", "pair0.png"])
def test_paircomp_bad_file_name(db, tmp_path, name):
    m = _paircomp(tmp_path, ["0_0_0.png", name])
    p = import_fails(db, m).problems[0]
    assert (Path(p.file).name, p.field) == (name, "path")
    assert "X_Y_Z.png" in p.message


def test_paircomp_pair_not_in_file(db, tmp_path):
    m = _paircomp(tmp_path, ["0_0_0.png", "5_1_0.png"])
    assert "pair 5 is not in PairComp.json" in _only(import_fails(db, m))


def test_paircomp_pair_missing_a_caption(db, tmp_path):
    m = _paircomp(tmp_path, ["0_0_0.png"])
    (m.parent / "PairComp.json").write_text(json.dumps([{"category": "c", "caption1": "a"}]))
    p = import_fails(db, m).problems[0]
    assert (p.row, p.field) == (1, "caption2")


def _geneval2(tmp_path: Path, mapping: dict[str, str]) -> Path:
    data = shared_path("benchmarks", "geneval2", "geneval2_data.jsonl")
    root = tmp_path / "g2"
    write_png(root / "out" / "m1" / "0.png", size=TINY)
    (root / "m1.json").write_text(json.dumps(mapping))
    return _manifest(root, f"name: g2\nlayout: geneval2\nroot: out\nprompts: {data}\n"
                           "models:\n  m1: m1.json\n")


@pytest.mark.shared
def test_geneval2_prompt_not_in_benchmark(db, tmp_path):
    m = _geneval2(tmp_path, {"a purple elephant juggling": "m1/0.png"})
    p = import_fails(db, m).problems[0]
    assert p.file == str(m.parent / "m1.json")
    assert "prompt not in the benchmark" in p.message


@pytest.mark.shared
def test_geneval2_mapping_path_traversal(db, tmp_path):
    m = _geneval2(tmp_path, {"a green backpack and a pig": "../../etc/passwd"})
    p = import_fails(db, m).problems[0]
    assert p.file == str(m.parent / "m1.json")
    assert "leaves the study root" in p.message
    assert p.field == "a green backpack and a pig"


@pytest.mark.shared
def test_geneval2_mapping_to_missing_image(db, tmp_path):
    m = _geneval2(tmp_path, {"a green backpack and a pig": "m1/none.png"})
    assert "file not found ('m1/none.png')" in _only(import_fails(db, m))


@pytest.mark.shared
def test_tiif_misaligned_question_file(db, tmp_path):
    src = shared_path("benchmarks", "tiif")
    root = tmp_path / "tiif"
    (root / "p").mkdir(parents=True)
    (root / "q").mkdir()
    name = "color+2d"
    (root / "p" / f"{name}_prompts.jsonl").write_text(
        (src / "testmini_prompts" / f"{name}_prompts.jsonl").read_text())
    lines = (src / "testmini_eval_prompts" / f"{name}_eval_prompts.jsonl").read_text()
    qfile = root / "q" / f"{name}_eval_prompts.jsonl"
    qfile.write_text("".join(lines.splitlines(keepends=True)[:-1]))
    (root / "r").mkdir()
    m = _manifest(root, "name: t\nlayout: tiif\nroot: r\nprompts: p\nquestions: q\n")
    p = import_fails(db, m).problems[0]
    assert p.file == str(qfile)
    assert "line-aligned" in p.message


def test_tiif_image_without_prompt(db, tmp_path):
    root = tmp_path / "tiif"
    (root / "p").mkdir(parents=True)
    (root / "q").mkdir()
    (root / "p" / "color_prompts.jsonl").write_text(json.dumps(
        {"short_description": "a red cup", "long_description": "a long red cup"}) + "\n")
    (root / "q" / "color_eval_prompts.jsonl").write_text(json.dumps(
        {"yn_question_list": ["Is the cup red?"], "yn_answer_list": ["yes"]}) + "\n")
    f = write_png(root / "r" / "m1" / "color" / "short" / "3.png", size=TINY)
    m = _manifest(root, "name: t\nlayout: tiif\nroot: r\nprompts: p\nquestions: q\n")
    p = import_fails(db, m).problems[0]
    assert p.file == str(f)
    assert "'color/3/short'" in p.message


def test_paraphrase_bad_category(db, tmp_path):
    root = tmp_path / "pp"
    root.mkdir()
    (root / "para.csv").write_text("group_id,category,prompt\ng1,abstract,a\ng1,surreal,b\n")
    (root / "imgs").mkdir()
    m = _manifest(root, "name: pp\nlayout: paraphrase\nroot: imgs\nprompts: para.csv\n")
    p = import_fails(db, m).problems[0]
    assert (p.row, p.field) == (3, "category")
    assert "'surreal'" in p.message


def test_imagenhub_source_symlink_escape(db, tmp_path):
    task = tmp_path / "ih" / "res" / "Text-Guided_IE"
    write_png(task / "m1" / "s.jpg", size=TINY, fmt="JPEG")
    write_png(tmp_path / "private.jpg", size=TINY, fmt="JPEG")
    (task / "input").mkdir()
    (task / "input" / "s.jpg").symlink_to(tmp_path / "private.jpg")
    m = _manifest(tmp_path / "ih", "name: ih\nlayout: imagenhub\nroot: res\n")
    p = import_fails(db, m).problems[0]
    assert p.field == "source_image"
    assert "leaves the study root" in p.message
    assert p.file == str(task / "input" / "s.jpg")


def test_study_without_prompts(db, study):
    (study.parent / "prompts.csv").write_text("prompt_id,prompt\n")
    for f in (study.parent / "images").glob("*/*.png"):
        f.unlink()
    assert "the study has no prompts" in _only(import_fails(db, study))


def test_good_import_after_a_failed_one(db, study):
    f = _img(study, "m1", "p0.png")
    f.write_text("junk")
    with pytest.raises(InputError):
        studies.import_manifest(db, study)
    write_png(f, size=TINY)
    assert studies.import_manifest(db, study).images_added == 6
    with unchanged(db):
        studies.import_manifest(db, study)


@pytest.mark.parametrize(("key", "value"), [("seed", "abc"), ("benchmark", "[1, 2]"),
                                            ("models", "m1"), ("tasks", "T2I")])
def test_mistyped_manifest_values(db, study, key, value):
    study.write_text(study.read_text() + f"{key}: {value}\n")
    assert import_fails(db, study).problems[0].field == key


def test_source_image_that_is_not_an_image(tmp_path, db):
    root = tmp_path / "src"
    manifest = make_folder_study(root, prompts=1, models=("m1",))
    (root / "images" / "inputs").mkdir()
    (root / "images" / "inputs" / "p0.png").write_text("not an image")
    (root / "prompts.csv").write_text("prompt_id,prompt,source_image\np0,edit it,inputs/p0.png\n")
    text = problem_text(import_fails(db, manifest))
    assert "inputs/p0.png" in text
    assert "source_image" in text


@pytest.mark.parametrize(("rows", "protocol", "field", "message"), [
    ("p0,m1,rank,1\n", "score", "criterion", "needs protocol rank or both"),
    ("p0,m1,rank,3\n", "rank", "expected", "a rank from 1 to 2"),
    ("p0,m1,rank,1.5\n", "rank", "expected", "a rank from 1 to 2"),
    ("p0,m1,rank,1\np0,m2,rank,1\n", "rank", "expected", "already has a gold image for rank 1"),
    ("p0,m1,SC,x\n", "score", "expected", "expected a number, got 'x'"),
])
def test_bad_ranking_gold_is_refused(tmp_path, db, rows, protocol, field, message):
    gold = tmp_path / "gold.csv"
    gold.write_text("prompt_id,model,criterion,expected\n" + rows)
    manifest = make_folder_study(tmp_path / "g", prompts=2, protocol=protocol,
                                 extra=f"gold: {gold}\n")
    err = str(import_fails(db, manifest))
    assert f"field '{field}'" in err and message in err and "gold.csv" in err


@pytest.mark.parametrize("value", ["0", "-5", "x", "100000000000000000000", ".nan", "true"])
def test_bad_lease_minutes_is_refused(db, study, value):
    study.write_text(study.read_text() + f"lease_minutes: {value}\n")
    err = str(import_fails(db, study))
    assert "field 'lease_minutes'" in err and "a week" in err


@pytest.mark.parametrize(("value", "message"), [
    ("[1, 2]", "expected a mapping"),
    ("{min_secs: 3}", "unknown key(s) ['min_secs']"),
    ("{max_fast_share: 7}", "max_fast_share"),
])
def test_bad_quality_thresholds_are_refused(db, study, value, message):
    study.write_text(study.read_text() + f"quality: {value}\n")
    err = str(import_fails(db, study))
    assert "field 'quality'" in err and message in err


def test_quality_thresholds_reach_the_study_settings(db, study):
    from concord.store import studies as study_store

    study.write_text(study.read_text() + "quality: {min_seconds_rating: 4, min_items: 3}\n")
    studies.import_manifest(db, study)
    settings = study_store.get_study(db, "bad").settings
    assert settings["quality"] == {"min_seconds_rating": 4, "min_items": 3}

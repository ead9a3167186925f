"""Hostile or careless inputs to `import`: pipes, link loops, YAML bombs, deep nesting,
duplicate keys and numbers too large to store. Each is refused with one line naming the
file (and row and field where there is one), at once and in bounded memory, and the
database is left exactly as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc

import pytest

from concord.importers.build import READERS
from concord.importers.manifest import load_manifest
from concord.importers.tiif_judge import JudgeFileError, read_tiif_judge_jsonl
from concord.rubrics import validate_rubrics
from concord.services import studies
from concord.store import open_db
from tests.foundation_helpers import (  # noqa: F401 - the fixtures study, db
    ROOT,
    bad_study,
    good_db,
    import_fails,
    make_folder_study,
    problem_text,
    write_png,
)

pytestmark = pytest.mark.both_engines

TINY = (8, 8)


def _one(err) -> str:
    assert len(err.problems) == 1, problem_text(err)
    return str(err.problems[0])


def _cli(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``python -m concord`` in a subprocess; a hang fails the test instead of blocking it."""
    env = {k: v for k, v in os.environ.items() if k != "CONCORD_DB"}
    try:
        return subprocess.run([sys.executable, "-m", "concord", *argv], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`concord {' '.join(argv)}` still running after {timeout} s (a hang)")


def _one_line_error(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    return res.stderr


# --- pipes and link loops ------------------------------------------------------------------

def test_a_named_pipe_in_a_model_folder_is_refused_not_waited_on(tmp_path, study):
    fifo = study.parent / "images" / "m1" / "p2_1.png"
    os.mkfifo(fifo)
    dbp = tmp_path / "cli.db"
    err = _one_line_error(_cli("--db", str(dbp), "import", str(study), timeout=60))
    assert f"{fifo}, field 'image': is not a regular file" in err
    assert open_db(dbp).execute("SELECT COUNT(*) FROM studies").fetchone()[0] == 0


def test_a_named_pipe_as_an_editing_source_image_is_refused(db, tmp_path):
    task = tmp_path / "ih" / "res" / "Text-Guided_IE"
    write_png(task / "m1" / "s.jpg", size=TINY, fmt="JPEG")
    (task / "input").mkdir()
    os.mkfifo(task / "input" / "s.jpg")  # was skipped: the prompt silently lost its source
    (tmp_path / "ih" / "m.yaml").write_text("name: ih\nlayout: imagenhub\nroot: res\n")
    p = import_fails(db, tmp_path / "ih" / "m.yaml").problems[0]
    assert (p.file, p.field) == (str(task / "input" / "s.jpg"), "source_image")
    assert "not a regular file" in p.message


def test_a_named_pipe_in_a_tiif_result_tree_is_refused(db, tmp_path):
    root = tmp_path / "tiif"
    (root / "p").mkdir(parents=True)
    (root / "q").mkdir()
    (root / "p" / "color_prompts.jsonl").write_text(json.dumps(
        {"short_description": "a red cup", "long_description": "a long red cup"}) + "\n")
    (root / "q" / "color_eval_prompts.jsonl").write_text(json.dumps(
        {"yn_question_list": ["Is the cup red?"], "yn_answer_list": ["yes"]}) + "\n")
    write_png(root / "r" / "m1" / "color" / "short" / "0.png", size=TINY)
    fifo = root / "r" / "m1" / "color" / "long" / "0.png"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    (root / "m.yaml").write_text("name: t\nlayout: tiif\nroot: r\nprompts: p\nquestions: q\n")
    assert _one(import_fails(db, root / "m.yaml")).startswith(
        f"{fifo}, field 'image': is not a regular file")


def test_a_named_pipe_as_a_rubric_file_is_refused(tmp_path):
    os.mkfifo(tmp_path / "x.yaml")
    res = _cli("validate-rubrics", "--dir", str(tmp_path), timeout=60)
    assert res.returncode == 1
    assert "x.yaml: is not a regular file" in res.stderr


@pytest.mark.parametrize("key", ["root", "prompts", "gold"])
def test_a_symlink_loop_named_by_the_manifest(db, study, key):
    loop = study.parent / "loop"
    loop.symlink_to(loop)
    text = study.read_text()
    text = (text.replace("root: images", "root: loop") if key == "root"
            else text.replace("prompts: prompts.csv", "prompts: loop") if key == "prompts"
            else text + "gold: loop\n")
    study.write_text(text)
    p = import_fails(db, study).problems[0]
    assert (p.file, p.field) == (str(study.resolve()), key)
    assert "cannot be resolved" in p.message
    assert "loop" in p.message


def test_a_symlink_loop_in_a_model_folder(db, study):
    loop = study.parent / "images" / "m1" / "p0_1.png"
    loop.symlink_to(loop)
    p = import_fails(db, study).problems[0]
    assert (p.file, p.field) == (str(loop), "image")
    assert "cannot be resolved" in p.message


def test_a_nul_character_in_a_manifest_path(db, study):
    study.write_text(study.read_text().replace("prompts: prompts.csv", 'prompts: "a\\0b.csv"'))
    p = import_fails(db, study).problems[0]
    assert p.field == "prompts"
    assert "null" in p.message


def test_a_nul_character_in_a_source_image_path(db, study):
    prompts = study.parent / "prompts.csv"
    prompts.write_text("prompt_id,prompt,source_image\np0,a,in\x00put.png\np1,b,\np2,c,\n")
    p = import_fails(db, study).problems[0]
    assert (p.file, p.row, p.field) == (str(prompts), 2, "source_image")


# --- YAML and JSON bounds ---------------------------------------------------------------

def _laughs(levels: int) -> str:
    """A YAML 'billion laughs': each level is 9 aliases of the one before (9**levels)."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_a_billion_laughs_under_description_is_refused_at_once(db, study):
    # 9**7 = 4.8 M strings: enough to show it is bounded, small enough not to hurt if not
    bomb = _laughs(7).replace("\nl", "\n  l").replace("l0:", "description:\n  l0:", 1)
    study.write_text(study.read_text() + bomb)
    tracemalloc.start()
    start = time.perf_counter()
    try:
        text = _one(import_fails(db, study))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < 5
    assert peak < 50 << 20
    assert text.startswith(f"{study}, row ")
    assert "expands to more than 100,000 values" in text


def test_a_billion_laughs_in_a_rubric_file_is_refused(tmp_path):
    (tmp_path / "x.yaml").write_text(_laughs(9) + "id: x\n")
    [problem] = validate_rubrics(tmp_path)
    assert "invalid YAML: expands to more than 100,000 values" in str(problem)


def test_a_yaml_alias_that_contains_itself(db, study):
    study.write_text(study.read_text() + "description: &d [*d]\n")
    assert "an alias refers to a node that contains it" in _one(import_fails(db, study))


def test_ten_thousand_levels_of_yaml(db, study):
    study.write_text(study.read_text() + "description: " + "[" * 10_000 + "]" * 10_000 + "\n")
    text = _one(import_fails(db, study))
    assert text.startswith(f"{study}, row 7: nested more than 64 levels deep")


def test_ten_thousand_levels_of_json_manifest(db, tmp_path):
    path = tmp_path / "m.json"
    path.write_text('{"name": "x", "layout": "folder", "description": '
                    + "[" * 10_000 + "]" * 10_000 + "}")
    assert _one(import_fails(db, path)).startswith(f"{path}: nested more than 64 levels")


def test_ten_thousand_levels_in_a_jsonl_line(db, study):
    prompts = study.parent / "prompts.jsonl"
    prompts.write_text('{"prompt_id": "p0", "prompt": "a"}\n{"prompt_id": "p1", "prompt": "b", '
                       '"extra": ' + "[" * 10_000 + "]" * 10_000 + "}\n")
    study.write_text(study.read_text().replace("prompts.csv", "prompts.jsonl"))
    p = import_fails(db, study).problems[0]
    assert (p.file, p.row) == (str(prompts), 2)
    assert "nested more than 64 levels deep" in p.message


def test_deep_nesting_gives_one_line_in_a_subprocess(tmp_path, study):
    study.write_text(study.read_text() + "description: " + "[" * 10_000 + "]" * 10_000 + "\n")
    err = _one_line_error(_cli("--db", str(tmp_path / "c.db"), "import", str(study)))
    assert "nested more than 64 levels deep" in err


def test_a_duplicate_key_in_a_yaml_manifest(db, study):
    study.write_text(study.read_text() + "name: other\n")
    text = _one(import_fails(db, study))
    assert text.startswith(f"{study}, row 7: key 'name' twice in one mapping (first on line 1)")


def test_a_key_overriding_a_yaml_merge_is_not_a_duplicate(study):
    study.write_text(study.read_text() + "ranking:\n  <<: {seed: 1, ties: true}\n  seed: 2\n")
    ranking = load_manifest(study, READERS).ranking
    assert (ranking.seed, ranking.ties) == (2, True)


def test_a_duplicate_key_in_a_json_manifest(db, tmp_path):
    path = tmp_path / "m.json"
    path.write_text('{"name": "a", "layout": "folder", "name": "b"}')
    assert "key 'name' twice in one object" in _one(import_fails(db, path))


def test_a_duplicate_key_in_a_jsonl_row(db, study):
    prompts = study.parent / "prompts.jsonl"
    prompts.write_text('{"prompt_id": "p0", "prompt": "a", "prompt": "b"}\n')
    study.write_text(study.read_text().replace("prompts.csv", "prompts.jsonl"))
    p = import_fails(db, study).problems[0]
    assert (p.file, p.row) == (str(prompts), 1)
    assert "key 'prompt' twice" in p.message


def test_a_number_with_five_thousand_digits(db, study):
    study.write_text(study.read_text() + "seed: " + "9" * 5000 + "\n")
    assert "number too long (5,000 characters)" in _one(import_fails(db, study))


def test_a_manifest_larger_than_one_mib(db, study):
    study.write_text(study.read_text() + "description: '" + "x" * (1 << 20) + "'\n")
    assert "file larger than the limit of 1.0 MiB" in _one(import_fails(db, study))


# --- numbers SQLite cannot store --------------------------------------------------------

@pytest.mark.parametrize(("text", "field"), [
    ("raters_per_item: 100000000000000000000\n", "raters_per_item"),
    ("raters_per_item: 1001\n", "raters_per_item"),
    ("seed: 99999999999999999999\n", "seed"),
    ("max_pixels: 99999999999999999999\n", "max_pixels"),
    ("ranking:\n  sample: 99999999999999999999\n", "ranking.sample"),
    ("ranking:\n  sample: -1\n", "ranking.sample"),
    ("ranking:\n  seed: -99999999999999999999\n", "ranking.seed"),
    ("ranking:\n  prompts_per_dimension: 0\n", "ranking.prompts_per_dimension"),
])
def test_manifest_numbers_out_of_range(db, study, text, field):
    study.write_text(study.read_text().replace("raters_per_item: 2\n", "") + text)
    text = _one(import_fails(db, study))
    assert text.startswith(f"{study}, field '{field}': expected a whole number from ")


def test_a_huge_atom_count_in_a_prompt_table(db, study):
    prompts = study.parent / "prompts.csv"
    prompts.write_text("prompt_id,prompt,atom_count\np0,a,99999999999999999999\np1,b,1\np2,c,\n")
    p = import_fails(db, study).problems[0]
    assert (p.file, p.row, p.field) == (str(prompts), 2, "atom_count")
    assert "from 0 to 9,223,372,036,854,775,807" in p.message


def test_a_huge_sample_number_in_a_file_name(db, study):
    f = write_png(study.parent / "images" / "m1" / "p0_99999999999999999999.png", size=TINY)
    p = import_fails(db, study).problems[0]
    assert (p.file, p.field) == (str(f), "sample")
    assert "above 2,147,483,647" in p.message


@pytest.mark.parametrize(("row", "field", "message"), [
    ("p0,m1,SC,1,-1,0", "sample", "from 0 to"),
    ("p0,m1,SC,1,99999999999999999999,0", "sample", "from 0 to"),
    ("p0,m1,SC,nan,0,0", "expected", "finite number"),
    ("p0,m1,SC,1,0,-0.5", "tolerance", "≥ 0"),
    ("p0,m1,SC,1,0,inf", "tolerance", "finite number"),
])
def test_bad_numbers_in_gold(db, study, row, field, message):
    gold = study.parent / "gold.csv"
    gold.write_text(f"prompt_id,model,criterion,expected,sample,tolerance\n{row}\n")
    study.write_text(study.read_text() + "gold: gold.csv\n")
    p = import_fails(db, study).problems[0]
    assert (p.file, p.row, p.field) == (str(gold), 2, field)
    assert message in p.message


def test_huge_numbers_give_one_line_in_a_subprocess(tmp_path, study):
    text = study.read_text().replace("raters_per_item: 2", f"raters_per_item: {10**20}")
    study.write_text(text + "ranking:\n  sample: 99999999999999999999\n")
    res = _cli("--db", str(tmp_path / "c.db"), "import", str(study))
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    assert "field 'raters_per_item'" in res.stderr
    assert "field 'ranking.sample'" in res.stderr


def test_a_study_name_with_a_newline(db, study):
    study.write_text(study.read_text().replace("name: bad", 'name: "bad\\nname"'))
    p = import_fails(db, study).problems[0]
    assert p.field == "name"
    assert "control character U+000A" in p.message


def test_limits_are_generous_for_real_inputs(db, tmp_path):
    """The bounds do not refuse a study that uses every feature at ordinary sizes."""
    manifest = make_folder_study(tmp_path / "ok", prompts=3, samples=2, extra=(
        "seed: -5\nmax_pixels: 9223372036854775807\n"
        "ranking:\n  sample: 1\n  seed: 9223372036854775807\n"))
    manifest.write_text(manifest.read_text().replace("raters_per_item: 2", "raters_per_item: 1000")
                        .replace("protocol: score", "protocol: both"))
    assert studies.import_manifest(db, manifest).images_added == 12


def test_json_lines_may_hold_unicode_line_separators(db, study):
    prompts = study.parent / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt_id": f"p{i}", "prompt": f"a\u2028b {i}"},
                                          ensure_ascii=False) + "\n" for i in range(3)),
                       encoding="utf-8")
    study.write_text(study.read_text().replace("prompts.csv", "prompts.jsonl"))
    assert studies.import_manifest(db, study).prompts_added == 3


def test_a_large_prompt_table_is_still_read(db, study):
    """10,000 prompts with nested JSON metadata: well inside every bound."""
    prompts = study.parent / "prompts.jsonl"
    rows = [{"prompt_id": f"p{i}", "prompt": f"prompt {i}", "extra": {"a": [[1, 2], [3]]}}
            for i in range(10_000)]
    prompts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    study.write_text(study.read_text().replace("prompts.csv", "prompts.jsonl"))
    assert studies.import_manifest(db, study).prompts_added == 10_000


# --- metric score files (TIIF-Bench judge outputs) ----------------------------------------

def test_a_named_pipe_as_judge_output_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "eval_results_GPT-4o.jsonl"
    os.mkfifo(fifo)
    err = _one_line_error(_cli("--db", str(tmp_path / "c.db"), "import-scores", "--study", "t",
                               "--format", "tiif", str(fifo)))
    assert f"{fifo}: is not a regular file" in err


def test_deep_nesting_and_huge_numbers_in_judge_output(tmp_path):
    record = {"attribute": "color", "desc": "short_description", "questions": ["q"],
              "gt_answers": ["yes"], "model_pred": ["yes"], "model": "m"}
    path = tmp_path / "judge.jsonl"
    path.write_text("\n".join([
        json.dumps({**record, "line_idx": 0}),
        json.dumps({**record, "line_idx": 10**20}),
        '{"line_idx": 1, "extra": ' + "[" * 10_000 + "]" * 10_000 + "}",
        '{"line_idx": 1, "line_idx": 2}',
    ]) + "\n")
    with pytest.raises(JudgeFileError) as info:
        read_tiif_judge_jsonl(path)
    found = {(p.row, p.field): p.message for p in info.value.problems}
    assert "from 0 to" in found[2, "line_idx"]
    assert found[3, None] == "nested more than 64 levels deep"
    assert found[4, None] == "key 'line_idx' twice in one object"


def test_the_documented_limits_are_the_enforced_ones():
    from concord.importers import safe_load as s

    doc = (ROOT / "docs" / "manifest.md").read_text(encoding="utf-8")
    section = doc.split("## What each input may be, and how large")[1].split("\n## ")[0]
    for text in (f"{s.MAX_DOCUMENT_BYTES >> 20} MiB", f"{s.MAX_TABLE_BYTES >> 20} MiB",
                 f"nested at most **{s.MAX_DEPTH}** levels", f"**{s.MAX_YAML_NODES:,}** values",
                 f"1 to {s.MAX_RATERS_PER_ITEM:,}", "0 to 2³¹ − 1", "−2⁶³ to 2⁶³ − 1"):
        assert text in section, text
    assert s.MAX_SAMPLE == 2**31 - 1
    assert (s.INT64_MIN, s.INT64_MAX) == (-(2**63), 2**63 - 1)

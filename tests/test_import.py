"""`import MANIFEST`: every layout's happy path, idempotency, additions, ranking set-up."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from concord.config import DEMO_MANIFEST
from concord.importers.build import plan_from_manifest
from concord.services import studies
from concord.store import studies as study_store
from tests.foundation_helpers import shared_path, snapshot, study_id, unchanged, write_png

pytestmark = pytest.mark.both_engines

TINY = (8, 8)


def _rows(db, sql: str, params=()) -> list[dict]:
    return list(db.query(sql, params))


def _write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


# --- folder ----------------------------------------------------------------------------

def test_folder_layout_with_samples(db, study_factory):
    s = studies.import_manifest(db, study_factory("f", prompts=3, samples=2))
    assert (s.created, s.models_added, s.prompts_added, s.images_added) == (True, 2, 3, 12)
    rows = _rows(db, "SELECT p.key, m.name, i.sample, i.path, i.width, i.height, i.sha256,"
                     " p.dimension FROM images i JOIN prompts p ON p.id = i.prompt_id"
                     " JOIN models m ON m.id = i.model_id ORDER BY i.path")
    assert {r["sample"] for r in rows} == {0, 1}
    assert rows[0]["path"] == "m1/p0_0.png"
    assert (rows[0]["width"], rows[0]["height"]) == (32, 32)
    assert all(len(r["sha256"]) == 64 for r in rows)
    assert rows[0]["dimension"] == "count"
    study = study_store.get_study(db, "f")
    assert study.k == 2
    assert study.settings["layout"] == "folder"


def test_reimport_changes_nothing(db, study_factory):
    manifest = study_factory("f", prompts=3)
    studies.import_manifest(db, manifest)
    with unchanged(db):
        again = studies.import_manifest(db, manifest)
    assert not again.changed
    assert again.images_unchanged == 6


def test_adding_images_adds_only_the_new_ones(db, study_factory, tmp_path):
    manifest = study_factory("f", prompts=2)
    studies.import_manifest(db, manifest)
    before = {r["path"]: (r["id"], r["public_id"]) for r in _rows(db, "SELECT * FROM images")}
    write_png(tmp_path / "f" / "images" / "m1" / "p0_1.png", size=TINY)
    write_png(tmp_path / "f" / "images" / "m3" / "p1.png", size=TINY)
    s = studies.import_manifest(db, manifest)
    assert (s.images_added, s.models_added, s.prompts_added, s.images_unchanged) == (2, 1, 0, 4)
    after = {r["path"]: (r["id"], r["public_id"]) for r in _rows(db, "SELECT * FROM images")}
    assert {k: after[k] for k in before} == before
    assert set(after) - set(before) == {"m1/p0_1.png", "m3/p1.png"}


def test_adding_a_prompt_row_adds_it(db, study_factory, tmp_path):
    manifest = study_factory("f", prompts=2)
    studies.import_manifest(db, manifest)
    with (tmp_path / "f" / "prompts.csv").open("a", newline="") as f:
        csv.writer(f).writerow(["p9", "a new prompt", "count"])
    write_png(tmp_path / "f" / "images" / "m1" / "p9.png", size=TINY)
    write_png(tmp_path / "f" / "images" / "m2" / "p9.png", size=TINY)
    s = studies.import_manifest(db, manifest)
    assert (s.prompts_added, s.images_added) == (1, 2)
    positions = [r["position"] for r in _rows(db, "SELECT position FROM prompts ORDER BY id")]
    assert positions == [0, 1, 2]


def test_settings_change_is_recorded(db, study_factory, tmp_path):
    manifest = study_factory("f", prompts=1, k=2)
    studies.import_manifest(db, manifest)
    manifest.write_text(manifest.read_text().replace("raters_per_item: 2", "raters_per_item: 5"))
    studies.import_manifest(db, manifest)
    assert study_store.get_study(db, "f").k == 5
    assert _rows(db, "SELECT action FROM audit_log ORDER BY id")[-1]["action"] == "update_study"


def test_jsonl_prompts_and_json_manifest(db, tmp_path):
    root = tmp_path / "j"
    (root / "prompts.jsonl").parent.mkdir(parents=True)
    (root / "prompts.jsonl").write_text(
        json.dumps({"prompt_id": "a", "prompt": "a red cube", "skills": ["color", "object"],
                    "atom_count": 2, "extra": "kept"}) + "\n", encoding="utf-8")
    write_png(root / "imgs" / "m1" / "a.webp", size=TINY, fmt="WEBP")
    write_png(root / "imgs" / "m2" / "a.jpg", size=TINY, fmt="JPEG")
    manifest = root / "study.json"
    manifest.write_text(json.dumps({"name": "j", "layout": "folder", "root": "imgs",
                                    "prompts": "prompts.jsonl", "models": ["m1", "m2"]}))
    s = studies.import_manifest(db, manifest)
    assert s.images_added == 2
    p = _rows(db, "SELECT * FROM prompts")[0]
    assert json.loads(p["skills"]) == ["color", "object"]
    assert p["atom_count"] == 2
    assert json.loads(p["meta"]) == {"extra": "kept"}


def test_demo_study_imports(db):
    s = studies.import_manifest(db, DEMO_MANIFEST)
    assert s.images_added == 36
    assert s.pairs_added == 18  # two per prompt
    assert study_store.get_study(db, "demo").protocol == "both"


# --- imagenhub -------------------------------------------------------------------------

def test_imagenhub_layout(db, tmp_path):
    root = tmp_path / "ih" / "results"
    task = root / "Text-Guided_IE"
    for uid in ("sample_0.jpg", "sample_1.jpg"):
        write_png(task / "input" / uid, size=TINY, fmt="JPEG")
        for model in ("InstructPix2Pix", "MagicBrush"):
            write_png(task / model / uid, size=TINY, fmt="JPEG")
    _write_csv(tmp_path / "ih" / "prompts.csv", ["prompt_id", "prompt", "instruction"],
               [["Text-Guided_IE/sample_0.jpg", "a dog on grass", "make it a cat"],
                ["Text-Guided_IE/sample_1.jpg", "a red car", "paint it blue"]])
    manifest = tmp_path / "ih" / "study.yaml"
    manifest.write_text("name: ih\nlayout: imagenhub\nroot: results\nprompts: prompts.csv\n"
                        "rubric: imagenhub-text-guided-editing\n")
    s = studies.import_manifest(db, manifest)
    assert (s.models_added, s.prompts_added, s.images_added) == (2, 2, 4)
    assert [r["name"] for r in _rows(db, "SELECT name FROM models ORDER BY id")] == [
        "InstructPix2Pix", "MagicBrush"]
    p = _rows(db, "SELECT * FROM prompts WHERE key = 'Text-Guided_IE/sample_0.jpg'")[0]
    assert p["source_image"] == "Text-Guided_IE/input/sample_0.jpg"
    assert (p["text"], p["instruction"], p["dimension"]) == ("a dog on grass", "make it a cat",
                                                             "Text-Guided_IE")
    assert json.loads(p["meta"]) == {"uid": "sample_0.jpg"}


# --- paircomp --------------------------------------------------------------------------

@pytest.mark.shared
def test_paircomp_layout(db, tmp_path):
    pairs = json.loads(shared_path("benchmarks", "paircomp", "PairComp.json").read_text())
    root = tmp_path / "pc"
    root.mkdir()
    (root / "PairComp.json").write_text(json.dumps(pairs[:4]), encoding="utf-8")
    for model in ("janus", "flux"):
        for x in range(2):
            for y in (0, 1):
                write_png(root / "images" / model / f"{x}_{y}_0.png", size=TINY)
        write_png(root / "images" / model / "0_0_1.png", size=TINY)
    manifest = root / "study.yaml"
    manifest.write_text("name: pc\nlayout: paircomp\nroot: images\nprompts: PairComp.json\n")
    s = studies.import_manifest(db, manifest)
    assert (s.prompts_added, s.images_added) == (8, 10)
    p = _rows(db, "SELECT * FROM prompts WHERE key = '1_1'")[0]
    assert p["text"] == pairs[1]["caption2"]
    assert p["dimension"] == pairs[1]["category"]
    assert json.loads(p["meta"]) == {"pair": 1, "caption": 1}
    samples = _rows(db, "SELECT i.sample FROM images i JOIN prompts p ON p.id = i.prompt_id"
                        " WHERE p.key = '0_0' ORDER BY i.sample")
    assert [r["sample"] for r in samples] == [0, 0, 1, 1]


# --- geneval2 --------------------------------------------------------------------------

@pytest.mark.shared
def test_geneval2_layout_stores_questions_with_skills(db, tmp_path):
    data = shared_path("benchmarks", "geneval2", "geneval2_data.jsonl")
    lines = [json.loads(x) for x in data.read_text().splitlines()[:3]]
    root = tmp_path / "g2"
    for model in ("m1", "m2"):
        mapping = {}
        for n, row in enumerate(lines):
            write_png(root / "out" / model / f"{n}.png", size=TINY)
            mapping[row["prompt"]] = f"{model}/{n}.png"
        (root / f"{model}.json").write_text(json.dumps(mapping), encoding="utf-8")
    manifest = root / "study.yaml"
    manifest.write_text(f"name: g2\nlayout: geneval2\nroot: out\nprompts: {data}\n"
                        "models:\n  m1: m1.json\n  m2: m2.json\n")
    s = studies.import_manifest(db, manifest)
    assert (s.prompts_added, s.images_added) == (800, 6)
    p = _rows(db, "SELECT * FROM prompts WHERE key = '0'")[0]
    assert p["text"] == lines[0]["prompt"]
    assert p["atom_count"] == lines[0]["atom_count"]
    assert json.loads(p["skills"]) == lines[0]["skills"]
    qs = _rows(db, "SELECT * FROM questions WHERE prompt_id = ? ORDER BY position", [p["id"]])
    assert [(q["text"], q["answer"]) for q in qs] == [tuple(x) for x in lines[0]["vqa_list"]]
    assert [q["skill"] for q in qs] == lines[0]["skills"]
    assert s.questions_added == sum(len(json.loads(x)["vqa_list"])
                                    for x in data.read_text().splitlines())


# --- tiif ------------------------------------------------------------------------------

@pytest.mark.shared
def test_tiif_layout_stores_questions(db, tmp_path):
    prompts = shared_path("benchmarks", "tiif", "testmini_prompts")
    questions = shared_path("benchmarks", "tiif", "testmini_eval_prompts")
    root = tmp_path / "tiif"
    for model in ("m1", "m2"):
        for variant in ("short", "long"):
            for idx in range(2):
                write_png(root / "res" / model / "color+2d" / variant / f"{idx}.png", size=TINY)
    manifest = root / "study.yaml"
    manifest.write_text(f"name: t\nlayout: tiif\nroot: res\nprompts: {prompts}\n"
                        f"questions: {questions}\n")
    s = studies.import_manifest(db, manifest)
    n_lines = sum(len(f.read_text().splitlines()) for f in prompts.glob("*_prompts.jsonl"))
    assert s.prompts_added == 2 * n_lines
    assert s.images_added == 8
    src = json.loads((prompts / "color+2d_prompts.jsonl").read_text().splitlines()[1])
    evq = json.loads((questions / "color+2d_eval_prompts.jsonl").read_text().splitlines()[1])
    p = _rows(db, "SELECT * FROM prompts WHERE key = 'color+2d/1/long'")[0]
    assert p["text"] == src["long_description"].strip()
    assert (p["variant"], p["dimension"], p["benchmark"]) == ("long", "color+2d", "tiif")
    qs = _rows(db, "SELECT * FROM questions WHERE prompt_id = ? ORDER BY position", [p["id"]])
    assert [q["text"] for q in qs] == evq["yn_question_list"]
    assert [q["answer"] for q in qs] == evq["yn_answer_list"]


# --- paraphrase ------------------------------------------------------------------------

def test_paraphrase_layout(db, tmp_path):
    root = tmp_path / "pp"
    _write_csv(root / "para.csv", ["group_id", "category", "prompt"],
               [["g1", "abstract", "freedom"], ["g1", "abstract", "liberty"],
                ["g2", "Realistic", "a cat on a mat"]])
    for model in ("m1", "m2"):
        for key in ("g1-1", "g1-2", "g2-1"):
            write_png(root / "imgs" / model / f"{key}.png", size=TINY)
    manifest = root / "study.yaml"
    manifest.write_text("name: pp\nlayout: paraphrase\nroot: imgs\nprompts: para.csv\n")
    s = studies.import_manifest(db, manifest)
    assert (s.prompts_added, s.images_added) == (3, 6)
    rows = _rows(db, "SELECT key, text, paraphrase_group, dimension FROM prompts ORDER BY id")
    assert [tuple(r.values()) for r in rows] == [
        ("g1-1", "freedom", "g1", "abstract"), ("g1-2", "liberty", "g1", "abstract"),
        ("g2-1", "a cat on a mat", "g2", "realistic")]


# --- ranking set-up --------------------------------------------------------------------

def _rank_study(root: Path, extra: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    _write_csv(root / "prompts.csv", ["prompt_id", "prompt", "dimension"],
               [[f"p{i}", f"prompt {i}", f"d{i % 2}"] for i in range(40)])
    for model in ("m1", "m2", "m3"):
        for i in range(40):
            write_png(root / "imgs" / model / f"p{i}.png", size=TINY)
    manifest = root / "study.yaml"
    manifest.write_text(f"name: r\nprotocol: rank\nlayout: folder\nroot: imgs\n"
                        f"prompts: prompts.csv\n{extra}")
    return manifest


def _rank_set(manifest: Path, extra: str) -> set[str]:
    base = manifest.read_text().split("ranking:")[0]
    manifest.write_text(base + extra)
    return {p.key for p in plan_from_manifest(manifest).prompts if p.rank_set}


def test_prompts_per_dimension_is_seeded(db, tmp_path):
    manifest = _rank_study(tmp_path / "r", "")
    cfg = "ranking:\n  prompts_per_dimension: 3\n  seed: {}\n"
    first = _rank_set(manifest, cfg.format(7))
    assert len(first) == 6
    assert {int(k[1:]) % 2 for k in first} == {0, 1}
    assert sum(int(k[1:]) % 2 for k in first) == 3  # three per dimension
    assert _rank_set(manifest, cfg.format(7)) == first
    others = [_rank_set(manifest, cfg.format(seed)) for seed in (1, 2, 3)]
    assert any(o != first for o in others)
    studies.import_manifest(db, manifest)  # the seed is recorded with the study
    settings = study_store.get_study(db, "r").settings["ranking"]
    assert settings["seed"] == 3
    assert settings["prompts_per_dimension"] == 3
    chosen = {r["key"] for r in _rows(db, "SELECT key FROM prompts WHERE rank_set = 1")}
    assert chosen == others[-1]


def test_explicit_ranking_prompts(db, tmp_path):
    manifest = _rank_study(tmp_path / "r", "ranking:\n  prompts: [p3, p5]\n  ties: true\n")
    studies.import_manifest(db, manifest)
    chosen = {r["key"] for r in _rows(db, "SELECT key FROM prompts WHERE rank_set = 1")}
    assert chosen == {"p3", "p5"}
    assert study_store.get_study(db, "r").settings["ranking"]["ties"] is True
    assert db.execute("SELECT COUNT(*) FROM prompts").fetchone()[0] == 40


def test_two_studies_share_one_database(db, study_factory):
    studies.import_manifest(db, study_factory("a", prompts=2))
    before = snapshot(db)["images"]
    studies.import_manifest(db, study_factory("b", prompts=1))
    assert study_id(db, "a") != study_id(db, "b")
    assert len(snapshot(db)["images"]) == len(before) + 2


def test_study_root_is_stored_absolute(db, study_factory, tmp_path):
    studies.import_manifest(db, study_factory("f", prompts=1))
    root = Path(study_store.get_study(db, "f").root)
    assert root.is_absolute()
    assert root == (tmp_path / "f" / "images").resolve()


def test_top_level_seed_and_benchmark(db, study_factory):
    manifest = study_factory("f", prompts=2, extra="seed: 42\nbenchmark: drawbench\n")
    studies.import_manifest(db, manifest)
    settings = study_store.get_study(db, "f").settings
    assert (settings["seed"], settings["benchmark"]) == (42, "drawbench")
    assert {r["benchmark"] for r in _rows(db, "SELECT benchmark FROM prompts")} == {"drawbench"}

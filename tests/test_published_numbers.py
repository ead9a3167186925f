"""Published numbers reproduced end to end: import through the CLI, then ``stats --json``.

ImagenHub (ICLR 2024) human-evaluation table from the released rating TSVs, and the
TIIF-Bench overall scores from the two released judge-output files. Both read ../shared
and skip cleanly without it.
"""

from __future__ import annotations

import json
import time

import pytest

from concord.cli import main
from tests.helpers import check_imagenhub_paper_cells, shared_path

pytestmark = pytest.mark.shared

# Cells of the published table that the rating files do not give to 0.005 (SOURCES.md):
# rounding or transcription errors on the page; each is within 0.01 of the data.
CRITERION = {"SC": "SC", "PR": "PQ", "O": "O"}  # Concord's PR is ImagenHub's PQ


def stats_json(capsys, db, study, *extra) -> dict:
    capsys.readouterr()
    assert main(["--db", str(db), "stats", "--study", study, "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def imagenhub_cells(doc: dict) -> dict[tuple[str, str, str], float | None]:
    """(task, model, statistic) -> value, from the per-dimension sections."""
    out = {}
    for r in doc["by_dimension"]["human"]:
        name = CRITERION[r["criterion"]]
        out[(r["dimension"], r["model"], f"{name}_mean")] = r["mean_rater_means"]
        out[(r["dimension"], r["model"], f"{name}_std_across_raters")] = r["std_rater_means"]
    for r in doc["by_dimension"]["agreement"]:
        name = CRITERION[r["criterion"]]
        out[(r["dimension"], r["model"], f"fleiss_kappa_{name}")] = r["fleiss_kappa"]
        out[(r["dimension"], r["model"], f"krippendorff_alpha_ordinal_{name}")] = (
            r["alpha_ordinal"])
    return out


def test_imagenhub_table_from_the_cli(tmp_path, capsys):
    folder = shared_path("datasets", "imagenhub_human_ratings")
    db = tmp_path / "ih.db"
    assert main(["--db", str(db), "import-ratings", "--study", "ih", "--format", "imagenhub",
                 str(folder / "human_ratings")]) == 0
    doc = stats_json(capsys, db, "ih", "--by-dimension", "--n-boot", "50", "--n-perm", "50")
    cells = imagenhub_cells(doc)
    check_imagenhub_paper_cells(cells, folder / "expected_published.csv")
    # Imagic (not in the paper): every SC is 0, so agreement on SC and O is undefined.
    for stat in ("fleiss_kappa_SC", "krippendorff_alpha_ordinal_SC", "fleiss_kappa_O",
                 "krippendorff_alpha_ordinal_O"):
        assert cells[("Text-Guided_IE", "Imagic", stat)] is None
    assert cells[("Text-Guided_IE", "Imagic", "SC_mean")] == 0.0
    # --dimension gives the same per-task numbers as the by-dimension section.
    t2i = stats_json(capsys, db, "ih", "--dimension", "Text-To-Image", "--n-boot", "50",
                     "--n-perm", "50")
    dalle3 = next(r for r in t2i["agreement"]["model"]
                  if r["model"] == "DALLE3" and r["criterion"] == "O")
    assert dalle3["fleiss_kappa"] == cells[("Text-To-Image", "DALLE3", "fleiss_kappa_O")]


def reference_overall(path) -> dict[tuple[str, str], float]:
    """(model, variant) -> Overall score of a result_summary_dimension_*.txt file."""
    block = path.read_text().split("==== Overall average")[1].split("==== ")[0]
    lines = [ln for ln in block.splitlines()[1:] if ln.strip() and not ln.startswith("Model")]
    variants = [c.replace("overall-", "") for c in lines[0].split()]
    out = {}
    for line in lines[1:]:
        model, *values = line.split()
        out.update({(model, v): float(x) for v, x in zip(variants, values, strict=True)})
    return out


def test_tiif_overall_scores_from_imported_judge_files(tmp_path, capsys):
    folder = shared_path("benchmarks", "tiif")
    db = tmp_path / "tiif.db"
    for judge in ("GPT-4o", "QwenVL"):
        path = folder / "eval_results_testmini" / f"tiif_testmini_eval_results_{judge}.jsonl"
        start = time.perf_counter()
        assert main(["--db", str(db), "import-scores", "--study", "tiif", "--format", "tiif",
                     str(path)]) == 0
        assert time.perf_counter() - start < 30  # 13.5 MB each; a few seconds here
    doc = stats_json(capsys, db, "tiif", "--n-boot", "20", "--n-perm", "20")
    summary = doc["benchmarks"]["tiif_summary"]
    assert doc["benchmarks"]["problems"] == []
    for judge in ("GPT-4o", "QwenVL"):
        expected = reference_overall(folder / "reference_outputs" /
                                     f"result_summary_dimension_{judge}.txt")
        assert len(expected) == 25 * 2
        ours = {(r["model"], r["variant"]): r["score"] for r in summary
                if r["judge"] == judge and r["group"] == "Overall"}
        assert set(ours) == set(expected)
        for key, value in expected.items():
            assert abs(ours[key] - value) <= 1e-4, (judge, key)

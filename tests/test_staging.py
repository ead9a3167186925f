"""The staging area's set-based checks against the plain queries they replace."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from concord.services.imports.ratings import import_ratings
from concord.store import studies as study_store
from concord.store.imports.staging import Stage

pytestmark = pytest.mark.both_engines

# The first form of the dimension check: each row looks at every earlier row of its prompt
# (quadratic in the rows of a prompt), kept here as the reference.
REFERENCE = (
    "SELECT s.file, s.line, s.prompt_id, s.dimension FROM stage.s_rows s"
    " WHERE s.dimension IS NOT NULL AND (EXISTS (SELECT 1 FROM stage.s_rows x"
    " WHERE x.prompt_id = s.prompt_id AND x.dimension IS NOT NULL AND"
    " x.dimension <> s.dimension AND x.seq < s.seq) OR EXISTS (SELECT 1 FROM"
    " main.prompts p WHERE p.study_id = :study AND p.key = s.prompt_id AND"
    " p.dimension IS NOT NULL AND p.dimension <> s.dimension)) ORDER BY s.seq")


def _rows(rng: random.Random, n: int) -> list[list]:
    """``n`` staged rows (the nine columns) over a few prompts, with dimensions that mostly
    agree, sometimes differ, and are sometimes missing."""
    cols: list[list] = [[] for _ in range(9)]
    for line in range(2, n + 2):
        prompt = f"p{rng.randrange(12)}"
        usual = f"d{int(prompt[1:]) % 3}"
        dim = rng.choice([usual] * 6 + [None, None, "d0", "d1", "d2"])
        row = (line, prompt, f"m{rng.randrange(4)}", 0, f"r{line}", "SC", 1.0, None, dim)
        for col, value in zip(cols, row, strict=True):
            col.append(value)
    return cols


@pytest.mark.parametrize("seed", range(8))
def test_dimension_conflicts_equal_the_row_by_row_query(db, tmp_path: Path, seed: int):
    # A study whose prompts p0..p5 already have a dimension: rows must agree with it too.
    csv = tmp_path / "study.csv"
    csv.write_text("prompt_id,model,rater,criterion,value,dimension\n" + "".join(
        f"p{i},m0,ann,SC,1,d{(i + seed) % 3}\n" for i in range(6)), encoding="utf-8")
    import_ratings(db, "s", "csv", csv)
    sid = study_store.get_study(db, "s").id
    rng = random.Random(seed)
    stage = Stage(db)
    try:
        for file in range(2):  # two files: rows of the second come after the first's
            stage.add(file, _rows(rng, 150))
        stage.index()
        for study in (sid, None):
            want = db.execute(REFERENCE, {"study": study}).fetchall()
            found = stage.dimension_conflicts(study, 10_000)
            assert found.rows == want
            assert found.total == len(want)
            assert stage.dimension_conflicts(study, 7).rows == want[:7]
        assert want  # the data has conflicts to find
    finally:
        stage.close()

"""The fast paths against plain reference implementations.

* ``store/frames.ratings_frame`` parses ``group_concat`` texts with numpy and picks the
  current revision itself; the reference is one plain SELECT over the ``current_ratings``
  view joined to names.
* ``stats/human``'s numpy group-by (rater means, image means, model scores) against
  pandas ``groupby``.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from concord.services import studies
from concord.services.imports.ratings import import_ratings
from concord.stats.human import model_scores
from concord.store import frames, rating_columns
from concord.store import ratings as rating_store
from concord.store import studies as study_store
from concord.store.db import open_db, transaction
from tests.foundation_helpers import invited
from tests.helpers import make_folder_study

pytestmark = pytest.mark.both_engines

REFERENCE_SQL = """
SELECT s.name AS study, p.key AS prompt_id, p.text AS prompt, m.name AS model, i.sample,
       r.image_id, ra.name AS rater, r.criterion, r.value, r.seconds, r.created_at,
       p.dimension
FROM current_ratings r
JOIN images i ON i.id = r.image_id
JOIN prompts p ON p.id = i.prompt_id
JOIN models m ON m.id = i.model_id
JOIN raters ra ON ra.id = r.rater_id
JOIN studies s ON s.id = r.study_id
WHERE r.study_id = ?
ORDER BY p.position, p.id, m.id, i.sample, ra.name, r.criterion
"""


def _messy_study(db, tmp_path) -> int:
    """Revisions, undos, missing seconds, odd values and names with commas and accents."""
    studies.import_manifest(db, make_folder_study(tmp_path / "s", prompts=4, samples=2,
                                                  models=("m,1", "mé2", "m3")))
    study = study_store.get_study(db, "s")
    raters = [invited(db, "s", name) for name in ("zoë", "ann, jr", "Bob", "al")]
    images = [r[0] for r in db.execute("SELECT id FROM images WHERE study_id = ?", [study.id])]
    rnd = random.Random(3)
    with transaction(db):
        for n in range(400):
            values = {c: rnd.choice([0.0, 0.5, 1.0, 0.1 + 0.2, 1 / 3, None])
                      for c in rnd.sample(["SC", "PR", "a,b"], rnd.randint(1, 3))}
            rating_store.insert_rating(
                db, study.id, rnd.choice(images), rnd.choice(raters), values,
                submission=f"s{n}", action=rnd.choice(["rate", "edit", "undo"]),
                seconds=rnd.choice([None, 1 / 7, 12.5]))
    return study.id


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("chunk", [2_000_000, 37])
def test_ratings_frame_equals_a_plain_select(db, engine, tmp_path, monkeypatch, chunk,
                                             parallel):
    study_id = _messy_study(db, tmp_path)
    monkeypatch.setattr(rating_columns, "_CHUNK_IDS", chunk)
    # parallel: the id ranges are read on their own connections in threads
    monkeypatch.setattr(rating_columns, "_PARALLEL_MIN_IDS", 1 if parallel else 10**12)
    reads = _count_range_reads(monkeypatch)
    fast = frames.ratings_frame(db, study_id).reset_index(drop=True)
    plain = pd.DataFrame([dict(r) for r in db.query(REFERENCE_SQL, [study_id])])
    assert len(plain) > 100
    assert list(fast.columns) == list(plain.columns)
    for col in plain.columns:
        expected = plain[col].to_numpy()
        got = fast[col].to_numpy()
        if col in ("value", "seconds"):
            assert np.allclose(got.astype(float), expected.astype(float), rtol=1e-14,
                               equal_nan=True), col
        else:
            assert [str(v) for v in got] == [str(v) for v in expected], col
    # values are the stored doubles, not their 15-digit prints
    assert set(fast["value"]) <= {0.0, 0.5, 1.0, 0.1 + 0.2, 1 / 3}
    # Threads with read-only connections are SQLite's (a file to open); PostgreSQL reads
    # every range on the caller's connection.
    assert (reads["n"] >= 2) == (parallel and engine == "sqlite")


def _count_range_reads(monkeypatch) -> dict:
    reads = {"n": 0}
    real = rating_columns._read_range

    def counted(*args):
        reads["n"] += 1
        return real(*args)

    monkeypatch.setattr(rating_columns, "_read_range", counted)
    return reads


def _reference(db, study_id: int) -> pd.DataFrame:
    return pd.DataFrame([dict(r) for r in db.query(REFERENCE_SQL, [study_id])])


def test_parallel_read_leaves_out_a_pending_batch_on_every_connection(db, engine, tmp_path,
                                                                     monkeypatch):
    study_id = _messy_study(db, tmp_path)
    monkeypatch.setattr(rating_columns, "_PARALLEL_MIN_IDS", 1)
    reads = _count_range_reads(monkeypatch)
    batch = db.execute("INSERT INTO import_batches (study_id, state, new_study, source, pid,"
                       " host, started_at, heartbeat) VALUES (?, 'pending', 0, 'test', 1,"
                       " 'h', 'x', 'x') RETURNING id", [study_id]).fetchone()[0]
    # rows spread over the whole id range, so every range holds some of the batch
    db.execute("UPDATE ratings SET batch = ? WHERE id % 3 = 0", [batch])
    db.conn.commit()
    fast = frames.ratings_frame(db, study_id)
    assert (reads["n"] >= 2) == (engine == "sqlite")
    assert len(fast) == len(_reference(db, study_id)) > 0
    hidden = db.execute("SELECT COUNT(*) FROM ratings WHERE batch = ?", [batch]).fetchone()[0]
    assert hidden > 50


def test_inside_an_open_transaction_the_read_stays_on_the_callers_connection(db, engine,
                                                                            tmp_path,
                                                                            monkeypatch):
    study_id = _messy_study(db, tmp_path)
    monkeypatch.setattr(rating_columns, "_PARALLEL_MIN_IDS", 1)
    reads = _count_range_reads(monkeypatch)
    before = len(frames.ratings_frame(db, study_id))
    with transaction(db):  # rows not committed yet are invisible to other connections
        db.execute("DELETE FROM ratings WHERE study_id = ?", [study_id])
        assert frames.ratings_frame(db, study_id).empty
    # the first read did run in parallel (SQLite's threads)
    assert before > 0 and (reads["n"] >= 2) == (engine == "sqlite")


def _ratings(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 3000
    frame = pd.DataFrame({
        "prompt_id": rng.choice([f"p{i}" for i in range(40)], n),
        "model": rng.choice(["a", "b", "c", "d"], n),
        "sample": rng.integers(0, 2, n),
        "rater": rng.choice([f"r{i}" for i in range(7)], n),
        "criterion": rng.choice(["SC", "PR"], n),
        "value": rng.choice([0.0, 0.5, 1.0], n),
    })
    return frame.drop_duplicates(["prompt_id", "model", "sample", "rater", "criterion"])


@pytest.mark.parametrize("seed", [0, 1])
def test_model_scores_equal_pandas_groupby(seed):
    ratings = _ratings(seed)
    got = model_scores(ratings).set_index(["model", "criterion"]).sort_index()
    keys = ["model", "criterion"]
    rater_means = ratings.groupby([*keys, "rater"])["value"].mean()
    by_rater = rater_means.groupby(level=keys)
    image_means = ratings.groupby([*keys, "prompt_id", "sample"])["value"].mean()
    by_image = image_means.groupby(level=keys)
    assert np.allclose(got["mean_rater_means"], by_rater.mean().sort_index())
    assert np.allclose(got["std_rater_means"], by_rater.std(ddof=0).sort_index())
    assert np.allclose(got["mean_image_means"], by_image.mean().sort_index())
    assert (got["n_raters"].to_numpy() == by_rater.size().sort_index().to_numpy()).all()
    assert (got["n_images"].to_numpy() == by_image.size().sort_index().to_numpy()).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sorted_codes_equal_np_unique(seed):
    from concord.stats._codes import sorted_codes

    rng = np.random.default_rng(seed)
    names = np.array(["b", "a", "ä", "B", "", "model 10", "model 9", "z"], dtype=object)
    values = names[rng.integers(0, len(names), 500)]
    uniques, codes = sorted_codes(values)
    ref_uniques, ref_codes = np.unique(values, return_inverse=True)
    assert uniques.tolist() == ref_uniques.tolist()
    assert codes.tolist() == ref_codes.ravel().tolist()
    with pytest.raises(ValueError, match="missing values"):
        sorted_codes(np.array(["a", None], dtype=object))


def test_parallel_read_of_a_database_whose_path_needs_quoting(tmp_path, monkeypatch):
    # the other connections open the file by URI: spaces, '#', '%', '?' and accents
    odd = tmp_path / "a dir #1 %20 ?x é"
    odd.mkdir()
    database = open_db(odd / "c #?.db")
    try:
        study_id = _messy_study(database, odd)
        serial = frames.ratings_frame(database, study_id)
        monkeypatch.setattr(rating_columns, "_PARALLEL_MIN_IDS", 1)
        reads = _count_range_reads(monkeypatch)
        assert frames.ratings_frame(database, study_id).equals(serial)
        assert reads["n"] >= 2
    finally:
        database.close()


def test_a_file_unlinked_since_it_was_opened_is_read_on_the_callers_connection(
        tmp_path, monkeypatch):
    path = tmp_path / "gone.db"
    database = open_db(path)
    try:
        study_id = _messy_study(database, tmp_path)
        serial = frames.ratings_frame(database, study_id)
        monkeypatch.setattr(rating_columns, "_PARALLEL_MIN_IDS", 1)
        monkeypatch.setattr(rating_columns, "_shareable_path", lambda db: str(path))
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)  # this connection still has it
        assert frames.ratings_frame(database, study_id).equals(serial)
    finally:
        database.close()


def test_parallel_read_of_an_imported_likert_study_with_other_criterion_names(
        db, tmp_path, monkeypatch):
    # a 1-7 scale, criteria named as another lab names them, raters who stopped part way
    rows = ["prompt_id,model,rater,criterion,value"]
    rnd = random.Random(7)
    for p in range(30):
        for m in ("sdxl-turbo", "flux.1 [dev]"):
            for r in range(5 if p < 20 else 2):
                for c in ("overall_quality", "Prompt-Fidelity"):
                    rows.append(f'p{p},"{m}",lab-{r},"{c}",{rnd.randint(1, 7)}')
    (tmp_path / "likert.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    import_ratings(db, "likert", "csv", tmp_path / "likert.csv",
                          criteria=["overall_quality=1..7", "Prompt-Fidelity=1..7"])
    study_id = study_store.get_study(db, "likert").id
    serial = frames.ratings_frame(db, study_id)
    monkeypatch.setattr(rating_columns, "_PARALLEL_MIN_IDS", 1)
    parallel = frames.ratings_frame(db, study_id)
    assert parallel.equals(serial) and len(parallel) == len(rows) - 1
    assert set(parallel["value"]) <= set(range(1, 8))

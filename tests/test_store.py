"""The store: schema, pragmas, transactions and the invariants of ratings and studies."""

from __future__ import annotations

import sqlite3

import pytest

from concord.errors import AuthError, InputError, NotFoundError
from concord.plan import GoldSpec, ImageSpec, PromptSpec, StudyPlan
from concord.services import studies
from concord.services.labelling import rating
from concord.services.labelling.common import new_submission
from concord.store import open_db, transaction
from concord.store import raters as rater_store
from concord.store import ratings as rating_store
from concord.store import studies as study_store
from concord.store.db import loads
from concord.store.migrations import migrations
from tests.foundation_helpers import DATA_TABLES, invited, rate_next, snapshot, study_id
from tests.helpers import sqlite_only

pytestmark = pytest.mark.both_engines


@pytest.fixture
def rated(db, study_factory):
    """A score study (2 prompts × 2 models) with one invited rater."""
    studies.import_manifest(db, study_factory("s1", prompts=2))
    return db, "s1", invited(db, "s1")


# --- schema and connection -------------------------------------------------------------

def test_schema_comes_from_migrations(db, engine):
    sqlite_only(engine, "PostgreSQL's schema is made at once (tests/test_pg_schema.py)")
    applied = [r[0] for r in db.execute("SELECT name FROM _sqlite_migrations").fetchall()]
    assert applied[:3] == ["m001_initial", "m002_current_views_by_lookup",
                           "m003_coverage_index"]
    assert migrations.pending(db) == []
    assert set(DATA_TABLES) <= set(db.table_names())
    assert {"current_ratings", "current_rankings"} <= set(db.view_names())


# Names recorded in users' databases, in the order they were shipped: never renamed or moved.
SHIPPED_MIGRATIONS = (
    "m001_initial", "m002_current_views_by_lookup", "m003_coverage_index", "m004_gold_units",
    "m005_leases_and_drafts", "m201_rater_exclusions", "m101_run_tracking",
    "m102_score_staging", "m103_geneval2_tifa_name", "m601_pairs", "m301_import_batches",
    "m701_crowd_studies", "m801_rating_checklists", "m901_adjudications",
    "m1001_report_cache",
)


def test_shipped_migrations_keep_their_names_order_and_transactions(db):
    registered = migrations.pending(open_db(":memory:", migrate=False))
    assert tuple(m.name for m in registered[:len(SHIPPED_MIGRATIONS)]) == SHIPPED_MIGRATIONS
    assert [m.name for m in registered if not m.transactional] == ["m601_pairs"]
    applied = [r[0] for r in db.execute("SELECT name FROM _sqlite_migrations ORDER BY id")]
    assert tuple(applied[:len(SHIPPED_MIGRATIONS)]) == SHIPPED_MIGRATIONS


def test_reopening_applies_no_migration_twice(tmp_path):
    path = tmp_path / "c.db"
    open_db(path).close()
    again = open_db(path)
    count = again.execute("SELECT COUNT(*) FROM _sqlite_migrations").fetchone()[0]
    assert count == len(migrations.applied(again)) >= 3
    assert migrations.pending(again) == []


def test_upgrade_keeps_the_current_views_answers(tmp_path, study_factory):
    """A database made before m002 is upgraded on open; the views give the same rows."""
    from concord.store.migrations import migrations

    path = tmp_path / "old.db"
    old = open_db(path, migrate=False)
    migrations.apply(old, stop_before="m002_current_views_by_lookup")
    old.close()
    db = open_db(path)
    studies.import_manifest(db, study_factory("s1", prompts=2))
    rid = invited(db, "s1")
    first = rate_next(db, "s1", rid, sc=0, pr=0)
    rate_next(db, "s1", rid, sc=1, pr=1)
    rating.submit(db, "s1", rid, first, {"SC": 2, "PR": 2}, submission=new_submission(),
                  edit=True)
    rating.undo_last(db, "s1", rid)
    via_view = db.execute("SELECT image_id, criterion, value, revision FROM current_ratings"
                          " ORDER BY 1, 2").fetchall()
    by_group = db.execute(
        "SELECT r.image_id, r.criterion, r.value, r.revision FROM ratings r JOIN (SELECT"
        " image_id, rater_id, criterion, MAX(revision) AS revision FROM ratings GROUP BY 1, 2,"
        " 3) last USING (image_id, rater_id, criterion, revision) WHERE r.value IS NOT NULL"
        " ORDER BY 1, 2").fetchall()
    assert via_view == by_group == [(first, "PR", 2.0, 2), (first, "SC", 2.0, 2)]


def test_wal_and_foreign_keys_are_on(db, engine):
    if engine == "sqlite":  # PostgreSQL always checks foreign keys and has its own log
        assert db.journal_mode == "wal"
        assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("INSERT INTO models (study_id, name) VALUES (999, 'x')")


def _write_then_fail(db, name: str) -> None:
    with transaction(db):
        rater_store.ensure_rater(db, name)
        raise RuntimeError("boom")


def test_transaction_rolls_back_everything_on_error(db):
    with pytest.raises(RuntimeError):
        _write_then_fail(db, "bob")
    assert db.execute("SELECT COUNT(*) FROM raters").fetchone()[0] == 0


def test_nested_transaction_is_a_savepoint(db):
    with transaction(db):
        rater_store.ensure_rater(db, "outer")
        with pytest.raises(RuntimeError):
            _write_then_fail(db, "inner")
    assert [r[0] for r in db.execute("SELECT name FROM raters").fetchall()] == ["outer"]


def test_apply_plan_is_one_transaction(db, study_factory):
    """A conflict found after the study and prompts were inserted leaves nothing behind."""
    plan = StudyPlan(name="p", protocol="score", rubric=None, root=None, models=["m"],
                     prompts=[PromptSpec("a", "text a")],
                     images=[ImageSpec("a", "m", 0, "x.png", "sha1")])
    study_store.apply_plan(db, plan)
    before = snapshot(db)
    bad = StudyPlan(name="p2", protocol="score", rubric=None, root=None, models=["m"],
                    prompts=[PromptSpec("a", "text a")], images=[])
    bad.gold = [GoldSpec("a", "zz", 0, "SC", 1.0)]  # no such image: found last
    with pytest.raises(InputError):
        study_store.apply_plan(db, bad)
    assert snapshot(db) == before


# --- ratings are never lost or duplicated ------------------------------------------------

def test_same_submission_twice_stores_one_rating(rated):
    db, name, rid = rated
    item = rating.next_item(db, name, rid)
    sub = new_submission()
    first = rating.submit(db, name, rid, item.image_id, {"SC": 1, "PR": 2}, submission=sub)
    second = rating.submit(db, name, rid, item.image_id, {"SC": 1, "PR": 2}, submission=sub)
    assert first.stored
    assert not second.stored
    assert db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == 2  # SC + PR


def test_second_plain_submit_of_a_rated_image_is_ignored(rated):
    db, name, rid = rated
    image_id = rate_next(db, name, rid, sc=1, pr=1)
    again = rating.submit(db, name, rid, image_id, {"SC": 0, "PR": 0},
                          submission=new_submission())
    assert not again.stored
    assert rating_store.current_values(db, image_id, rid) == {"SC": 1.0, "PR": 1.0}
    assert db.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == 2


def test_database_refuses_a_duplicate_revision(rated):
    db, name, rid = rated
    image_id = rate_next(db, name, rid)
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("INSERT INTO ratings (study_id, image_id, rater_id, criterion, value,"
                   " revision, submission, action, created_at) VALUES (?, ?, ?, 'SC', 0, 1,"
                   " 'other', 'rate', 'now')", [study_id(db, name), image_id, rid])


def test_rating_survives_reopening_the_database(rated, db_target):
    db, name, rid = rated
    image_id = rate_next(db, name, rid, sc=2, pr=0.5)
    db.close()
    again = open_db(db_target)
    assert rating_store.current_values(again, image_id, rid) == {"SC": 2.0, "PR": 0.5}


# --- history is complete -------------------------------------------------------------

def test_edit_and_undo_keep_every_revision(rated):
    db, name, rid = rated
    first = rate_next(db, name, rid, sc=0, pr=0)
    second = rate_next(db, name, rid, sc=1, pr=1)
    rating.submit(db, name, rid, first, {"SC": 2, "PR": 1}, submission=new_submission(),
                  edit=True)
    assert rating_store.current_values(db, first, rid) == {"SC": 2.0, "PR": 1.0}
    assert rating.undo_last(db, name, rid) == second  # the last *new* rating
    assert rating_store.current_values(db, second, rid) == {}
    assert rating_store.current_values(db, first, rid) == {"SC": 2.0, "PR": 1.0}
    rows = db.execute("SELECT image_id, revision, action, value FROM ratings WHERE"
                      " criterion = 'SC' ORDER BY image_id, revision").fetchall()
    assert sorted(rows) == sorted([(first, 1, "rate", 0.0), (first, 2, "edit", 2.0),
                                   (second, 1, "rate", 1.0), (second, 2, "undo", None)])
    history = rating_store.rating_history(db, study_id(db, name), rid)
    assert len(history) == 8
    assert [h["action"] for h in history[:2]] == ["undo", "undo"]


def test_rating_after_undo_is_the_current_value(rated):
    db, name, rid = rated
    image_id = rate_next(db, name, rid, sc=0, pr=0)
    rating.undo_last(db, name, rid)
    item = rating.next_item(db, name, rid)
    assert item.image_id == image_id  # the undone image is served again
    rating.submit(db, name, rid, image_id, {"SC": 1, "PR": 2}, submission=new_submission())
    assert rating_store.current_values(db, image_id, rid) == {"SC": 1.0, "PR": 2.0}
    revs = db.execute("SELECT COUNT(*) FROM ratings WHERE image_id = ?", [image_id]).fetchone()
    assert revs[0] == 6


def test_ranking_double_submit_edit_and_undo(db, study_factory):
    from concord.services.labelling import ranking

    studies.import_manifest(db, study_factory("r", prompts=2, protocol="rank"))
    rid = invited(db, "r")
    first = ranking.next_set(db, "r", rid)
    order = [[im.image_id] for im in first.images]
    assert ranking.submit(db, "r", rid, first, order) is not None
    assert ranking.submit(db, "r", rid, first, order) is None  # the same submission again
    again = ranking.open_set(db, "r", rid, first.prompt_id)
    ranking.submit(db, "r", rid, again, order[::-1], edit=True)
    current = rating_store.current_ranking(db, first.prompt_id, rid, "overall")
    assert current["ranks"] == {order[-1][0]: 1.0, order[0][0]: 2.0}
    second = ranking.next_set(db, "r", rid)
    ranking.submit(db, "r", rid, second, [[im.image_id] for im in second.images])
    assert ranking.undo_last(db, "r", rid) == second.prompt_id
    assert rating_store.current_ranking(db, second.prompt_id, rid, "overall") is None
    actions = [h["action"] for h in ranking.history(db, "r", rid)]
    assert actions == ["undo", "rank", "edit", "rank"]


# --- raters and tokens ------------------------------------------------------------------

def test_only_the_token_hash_is_stored(db, study_factory):
    studies.import_manifest(db, study_factory("s1"))
    [inv] = studies.invite(db, "s1", ["carol"], "http://h")
    token = inv.url.split("token=")[1]
    stored = db.execute("SELECT token_hash FROM raters").fetchone()[0]
    assert stored == rater_store.hash_token(token)
    assert token not in stored
    assert rater_store.rater_for_token(db, token).name == "carol"
    rater_store.revoke(db, "carol")
    with pytest.raises(AuthError, match="revoked"):
        rater_store.rater_for_token(db, token)
    with pytest.raises(AuthError):
        rater_store.rater_for_token(db, "not-a-token")


# --- deleting a study is explicit and total -------------------------------------------

def _references(db, sid: int) -> dict[str, int]:
    """Rows in any table that still point at study ``sid`` (directly or through a parent)."""
    q = {
        "studies": "SELECT COUNT(*) FROM studies WHERE id = ?",
        "models": "SELECT COUNT(*) FROM models WHERE study_id = ?",
        "prompts": "SELECT COUNT(*) FROM prompts WHERE study_id = ?",
        "images": "SELECT COUNT(*) FROM images WHERE study_id = ?",
        "study_raters": "SELECT COUNT(*) FROM study_raters WHERE study_id = ?",
        "assignments": "SELECT COUNT(*) FROM assignments WHERE study_id = ?",
        "ratings": "SELECT COUNT(*) FROM ratings WHERE study_id = ?",
        "rankings": "SELECT COUNT(*) FROM rankings WHERE study_id = ?",
        "marks": "SELECT COUNT(*) FROM marks WHERE study_id = ?",
        "runs": "SELECT COUNT(*) FROM runs WHERE study_id = ?",
        "metric_scores": "SELECT COUNT(*) FROM metric_scores WHERE study_id = ?",
    }
    out = {t: db.execute(s, [sid]).fetchone()[0] for t, s in q.items()}
    orphans = {
        "questions": "SELECT COUNT(*) FROM questions WHERE prompt_id NOT IN"
                     " (SELECT id FROM prompts)",
        "gold": "SELECT COUNT(*) FROM gold WHERE image_id NOT IN (SELECT id FROM images)",
        "ranking_items": "SELECT COUNT(*) FROM ranking_items WHERE ranking_id NOT IN"
                         " (SELECT id FROM rankings)",
    }
    out.update({t: db.execute(s).fetchone()[0] for t, s in orphans.items()})
    return out


def test_delete_study_removes_every_row_and_keeps_raters(db, study_factory, tmp_path):
    from concord.services.labelling import ranking
    from concord.store import runs as run_store
    from concord.store import scores as score_store

    gold = tmp_path / "gold.csv"
    gold.write_text("prompt_id,model,criterion,expected\np0,m1,SC,1\n")
    studies.import_manifest(db, study_factory("s1", protocol="both", extra=f"gold: {gold}\n"))
    studies.import_manifest(db, study_factory("keep"))
    rid = invited(db, "s1")
    invited(db, "keep", "bob")
    rate_next(db, "s1", rid)
    sid = study_id(db, "s1")
    item = rating.next_item(db, "s1", rid)
    rating.skip(db, "s1", rid, item.image_id, "broken")
    rating.flag(db, "s1", rid, item.image_id, "look")
    rank_set = ranking.next_set(db, "s1", rid)
    ranking.submit(db, "s1", rid, rank_set, [[im.image_id] for im in rank_set.images])
    run = run_store.start_run(db, run_id="r1", study_id=sid, metric="m", judge="", params={},
                              options_key=None, shard="", n_total=1)
    score_store.write_scores(db, sid, [score_store.ScoreRow(item.image_id, "m", "", "", 0.5)],
                             run)
    assert sum(_references(db, sid).values()) > 0
    keep_before = db.execute("SELECT COUNT(*) FROM images WHERE study_id = ?",
                             [study_id(db, "keep")]).fetchone()[0]
    counts = studies.delete(db, "s1")
    assert (counts["rating_values"], counts["rated_images"]) == (2, 1)  # SC and PR of one
    assert counts["images"] == 6
    assert all(v == 0 for v in _references(db, sid).values()), _references(db, sid)
    assert {r[0] for r in db.execute("SELECT name FROM raters").fetchall()} == {"alice", "bob"}
    assert db.execute("SELECT COUNT(*) FROM images WHERE study_id = ?",
                      [study_id(db, "keep")]).fetchone()[0] == keep_before
    last = next(iter(db.query("SELECT * FROM audit_log ORDER BY id DESC LIMIT 1")))
    assert (last["action"], last["study"]) == ("delete_study", "s1")
    assert loads(last["detail"])["rating_values"] == 2


def test_delete_unknown_study_names_it(db):
    with pytest.raises(NotFoundError, match="nope"):
        studies.delete(db, "nope")


def test_rater_not_in_study_cannot_rate(db, study_factory):
    studies.import_manifest(db, study_factory("s1"))
    studies.import_manifest(db, study_factory("s2"))
    rid = invited(db, "s2")
    with pytest.raises(AuthError):
        rating.next_item(db, "s1", rid)

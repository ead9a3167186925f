"""Writing staged pair votes and rankings into a pending import batch, paced like ratings.

Every write runs through :class:`concord.store.imports.rating_writes.Pacer` (short transactions,
raters first). Rows carry the batch id, so nothing is visible until the batch is published
(``current_pair_judgments`` and ``current_rankings`` skip pending rows). A label equal to
the one in effect now is not written again; another one becomes the next revision.
"""

from __future__ import annotations

from concord.store.db import now
from concord.store.imports.batches import visible
from concord.store.imports.rating_writes import Pacer, Written, walk, write_compared
from concord.store.imports.staging import stage_writes

_VOTES = (" FROM stage.s_votes v JOIN stage.s_raters r ON r.name = v.rater"
          " WHERE v.seq >= :lo AND v.seq < :hi")
_JUDGED = "x.pair_id = v.pair_id AND x.rater_id = r.rater_id AND x.criterion = v.criterion"
_LEFT = "CASE v.shown_left WHEN 'a' THEN v.image_a ELSE v.image_b END"
_RIGHT = "CASE v.shown_left WHEN 'a' THEN v.image_b ELSE v.image_a END"
_OUTCOME = ("CASE WHEN v.outcome IN ('tie', 'both_bad') THEN v.outcome"
            " WHEN v.outcome = v.shown_left THEN 'left' ELSE 'right' END")
# The judgment in effect now, as "outcome left-image" (NULL: none, or undone).
_CURRENT_VOTE = (f"(SELECT x.outcome || ' ' || x.left_image FROM main.pair_judgments x"
                 f" WHERE {_JUDGED} AND {visible('x')} ORDER BY x.revision DESC LIMIT 1)")
_STAGED_VOTE = f"({_OUTCOME} || ' ' || {_LEFT})"
_NEXT_VOTE = (f"COALESCE((SELECT MAX(x.revision) FROM main.pair_judgments x WHERE {_JUDGED}),"
              " 0) + 1")
_INSERT_VOTES = (
    "INSERT INTO main.pair_judgments (study_id, pair_id, rater_id, criterion, left_image,"
    " right_image, outcome, revision, submission, action, seconds, created_at, batch)"
    f" SELECT :study, v.pair_id, r.rater_id, v.criterion, {_LEFT}, {_RIGHT}, {_OUTCOME},"
    " {revision}, printf('import-%d-v%012d', :batch, v.seq), 'import', v.seconds,"
    f" COALESCE(v.time, :now), :batch{_VOTES}")

_RANKINGS = (" FROM stage.s_rankings g JOIN main.prompts p ON p.study_id = :study AND"
             " p.key = g.prompt_id JOIN stage.s_raters r ON r.name = g.rater"
             " WHERE g.n >= :lo AND g.n < :hi")
_RANKED = "x.prompt_id = p.id AND x.rater_id = r.rater_id AND x.criterion = g.criterion"
# A ranking as "image:rank,..." in image order: the staged one and the one in effect now.
_STAGED_RANKING = ("(SELECT group_concat(image_id || ':' || place, ',') FROM (SELECT"
                   " s.image_id, s.place FROM stage.s_ranked s WHERE s.ranking = g.n ORDER BY"
                   " s.image_id) AS o)")
_CURRENT_RANKING = (
    "(SELECT group_concat(image_id || ':' || rank, ',') FROM (SELECT ri.image_id, ri.rank"
    " FROM main.ranking_items ri WHERE ri.ranking_id = (SELECT x.id FROM main.rankings x"
    f" WHERE {_RANKED} AND {visible('x')} AND x.retracted = 0 AND NOT EXISTS (SELECT 1 FROM"
    " main.rankings y WHERE y.prompt_id = x.prompt_id AND y.rater_id = x.rater_id AND"
    f" y.criterion = x.criterion AND y.revision > x.revision AND {visible('y')}))"
    " ORDER BY ri.image_id) AS o)")
_NEXT_RANKING = (f"COALESCE((SELECT MAX(x.revision) FROM main.rankings x WHERE {_RANKED}),"
                 " 0) + 1")
# The slots the images were shown in, when every one is known; else no display order.
_DISPLAY = ("(SELECT CASE WHEN MIN(position) >= 0 THEN json_group_array(image_id) ELSE '[]'"
            " END FROM (SELECT s.image_id, s.position FROM stage.s_ranked s WHERE"
            " s.ranking = g.n ORDER BY s.position) AS o)")
_SUBMISSION = "printf('import-%d-k%012d', :batch, {n})"
_INSERT_RANKINGS = (
    "INSERT INTO main.rankings (study_id, prompt_id, rater_id, criterion, revision,"
    " submission, action, retracted, display_order, seconds, created_at, batch)"
    " SELECT :study, p.id, r.rater_id, g.criterion, {revision},"
    f" {_SUBMISSION.format(n='g.n')}, 'import', 0, {_DISPLAY}, g.seconds,"
    f" COALESCE(g.time, :now), :batch{_RANKINGS}")
_INSERT_ITEMS = (
    "INSERT INTO main.ranking_items (ranking_id, image_id, rank, position) SELECT k.id,"
    " s.image_id, s.place, s.position FROM stage.s_ranked s JOIN main.rankings k ON"
    f" k.submission = {_SUBMISSION.format(n='s.ranking')} WHERE s.ranking >= :lo AND"
    " s.ranking < :hi")


def create_pairs(pacer: Pacer, study_id: int) -> int:
    """The pairs the votes name that the study lacks (a study without image files: its
    pairs are never served to raters); returns how many were created."""
    db = pacer.db
    last = _last(pacer, "SELECT COALESCE(MAX(seq), 0) FROM stage.s_votes")

    def chunk(rows: int, lo: int) -> int:
        db.execute("INSERT INTO main.pairs (study_id, prompt_id, image_a, image_b, better,"
                   " created_at, batch) SELECT :study, i.prompt_id, min(v.image_a, v.image_b),"
                   " max(v.image_a, v.image_b), NULL, :now, :batch FROM stage.s_votes v JOIN"
                   " main.images i ON i.id = v.image_a WHERE v.seq >= :lo AND"
                   " v.seq < :lo + :rows ON CONFLICT DO NOTHING",
                   {"study": study_id, "now": now(), "batch": pacer.batch.id, "lo": lo,
                    "rows": rows})
        return rows

    walk(pacer, last, chunk)
    made = int(db.execute("SELECT COUNT(*) FROM main.pairs WHERE batch = ?",
                          [pacer.batch.id]).fetchone()[0])
    conn = db.conn
    with stage_writes(conn):
        conn.execute("UPDATE stage.s_votes AS v SET pair_id = p.id FROM main.pairs p WHERE"
                     " p.image_a = min(v.image_a, v.image_b) AND p.image_b = max(v.image_a,"
                     " v.image_b)")
    return made


def write_votes(pacer: Pacer, study_id: int, *, compare: bool) -> Written:
    """The staged votes as pending pair judgments (the next revision of each)."""
    last = _last(pacer, "SELECT COALESCE(MAX(seq), 0) FROM stage.s_votes")
    return write_compared(pacer, study_id, last, compare, insert=_INSERT_VOTES, revision=_NEXT_VOTE,
                  staged=_STAGED_VOTE, current=_CURRENT_VOTE, source=_VOTES)


def write_rankings(pacer: Pacer, study_id: int, *, compare: bool) -> Written:
    """The staged rankings as pending rankings with their ranked images."""
    last = _last(pacer, "SELECT COALESCE(MAX(n), 0) FROM stage.s_rankings")
    return write_compared(pacer, study_id, last, compare, insert=_INSERT_RANKINGS,
                  revision=_NEXT_RANKING, staged=_STAGED_RANKING, current=_CURRENT_RANKING,
                  source=_RANKINGS, then=_INSERT_ITEMS)


# A staged comment's label and the submission of its revision: the one this batch wrote,
# else the one in effect now (the label did not change); NULL when there is neither.
_COMMENT_TARGETS = {
    "image": (
        "t.image_id",
        " JOIN stage.s_targets t ON t.prompt_id = c.prompt_id AND t.model = c.model AND"
        " t.sample = c.sample",
        "COALESCE((SELECT x.submission FROM main.ratings x WHERE x.batch = :batch AND"
        " x.image_id = t.image_id AND x.rater_id = r.rater_id ORDER BY x.id LIMIT 1),"
        " (SELECT x.submission FROM main.current_ratings x WHERE x.image_id = t.image_id AND"
        " x.rater_id = r.rater_id ORDER BY x.id DESC LIMIT 1))"),
    "pair": (
        "v.pair_id",
        " JOIN stage.s_votes v ON v.line = c.line AND v.file = c.file AND v.rater = c.rater"
        " AND v.criterion = c.criterion",
        "COALESCE((SELECT x.submission FROM main.pair_judgments x WHERE x.submission ="
        " printf('import-%d-v%012d', :batch, v.seq)), (SELECT x.submission FROM"
        " main.current_pair_judgments x WHERE x.pair_id = v.pair_id AND x.rater_id ="
        " r.rater_id AND x.criterion = v.criterion))"),
    "prompt": (
        "p.id",
        " JOIN stage.s_rankings g ON g.prompt_id = c.prompt_id AND g.rater = c.rater AND"
        " g.criterion = c.criterion JOIN main.prompts p ON p.study_id = :study AND"
        " p.key = g.prompt_id",
        "COALESCE((SELECT x.submission FROM main.rankings x WHERE x.submission ="
        " printf('import-%d-k%012d', :batch, g.n)), (SELECT x.submission FROM"
        " main.current_rankings x WHERE x.prompt_id = p.id AND x.rater_id = r.rater_id AND"
        " x.criterion = g.criterion))"),
}


def write_comments(pacer: Pacer, study_id: int) -> int:
    """The staged comments, each with the revision of its label; returns how many were
    stored (a comment whose label has one already, or has no label, is not)."""
    db = pacer.db
    last = _last(pacer, "SELECT COALESCE(MAX(seq), 0) FROM stage.s_comments")
    before = int(db.execute("SELECT COUNT(*) FROM main.comments WHERE batch = ?",
                            [pacer.batch.id]).fetchone()[0])

    def chunk(rows: int, lo: int) -> int:
        args = {"lo": lo, "hi": lo + rows, "study": study_id, "now": now(),
                "batch": pacer.batch.id}
        for unit, (item, join, submission) in _COMMENT_TARGETS.items():
            db.execute(
                "INSERT INTO main.comments (study_id, rater_id, unit, item_id,"
                " submission, text, created_at, batch) SELECT :study, q.rater_id,"
                f" '{unit}', q.item, q.submission, q.text, :now, :batch FROM (SELECT"
                f" r.rater_id, {item} AS item, {submission} AS submission, c.text FROM"
                f" stage.s_comments c{join} JOIN stage.s_raters r ON r.name = c.rater"
                " WHERE c.unit = :unit AND c.seq >= :lo AND c.seq < :hi) AS q"
                " WHERE q.submission IS NOT NULL AND q.item IS NOT NULL"
                " ON CONFLICT DO NOTHING",
                {**args, "unit": unit})
        return rows

    walk(pacer, last, chunk)
    return int(db.execute("SELECT COUNT(*) FROM main.comments WHERE batch = ?",
                          [pacer.batch.id]).fetchone()[0]) - before


def _last(pacer: Pacer, sql: str) -> int:
    return int(pacer.db.execute(sql).fetchone()[0])

"""Staged pair votes and rankings of an import, beside the staged ratings.

The tables live in the ratings import's private temporary database (``stage``, see
:mod:`concord.store.imports.staging`), so one import can carry ratings, rankings and pair votes
(Concord's own export holds all three) and every check runs as SQL on disk. The targets
and raters the labels name join ``stage.s_targets`` and ``stage.s_raters``, from which
:mod:`concord.store.imports.rating_writes` creates what the study lacks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from concord.store.imports.staging import Found, Stage, create, stage_writes

_SCHEMA = """
CREATE TABLE stage.s_votes (
    seq INTEGER PRIMARY KEY, file INTEGER NOT NULL, line INTEGER NOT NULL,
    prompt_id TEXT NOT NULL, model_a TEXT NOT NULL, model_b TEXT NOT NULL,
    outcome TEXT NOT NULL, shown_left TEXT NOT NULL, rater TEXT NOT NULL,
    criterion TEXT NOT NULL, sample INTEGER NOT NULL, seconds DOUBLE PRECISION, time TEXT,
    dimension TEXT, image_a INTEGER, image_b INTEGER, pair_id INTEGER);
CREATE TABLE stage.s_ranked (
    seq INTEGER PRIMARY KEY, file INTEGER NOT NULL, line INTEGER NOT NULL,
    prompt_id TEXT NOT NULL, rater TEXT NOT NULL, criterion TEXT NOT NULL,
    model TEXT NOT NULL, sample INTEGER NOT NULL, rank DOUBLE PRECISION NOT NULL,
    position INTEGER NOT NULL, seconds DOUBLE PRECISION, time TEXT, dimension TEXT,
    place DOUBLE PRECISION, ranking INTEGER, image_id INTEGER);
CREATE TABLE stage.s_rankings (
    n INTEGER PRIMARY KEY, prompt_id TEXT NOT NULL, rater TEXT NOT NULL,
    criterion TEXT NOT NULL, first INTEGER NOT NULL, items INTEGER NOT NULL,
    seconds DOUBLE PRECISION, time TEXT, dimension TEXT, UNIQUE (prompt_id, rater, criterion));
CREATE TABLE stage.s_comments (
    seq INTEGER PRIMARY KEY, file INTEGER NOT NULL, line INTEGER NOT NULL,
    unit TEXT NOT NULL, prompt_id TEXT, model TEXT, sample INTEGER NOT NULL,
    rater TEXT NOT NULL, criterion TEXT, text TEXT NOT NULL)
"""
_VOTE_COLUMNS = ("line", "prompt_id", "model_a", "model_b", "outcome", "shown_left", "rater",
                 "criterion", "sample", "seconds", "time", "dimension")
_RANKED_COLUMNS = ("line", "prompt_id", "rater", "criterion", "model", "sample", "rank",
                   "position", "seconds", "time", "dimension")
# ``s_targets.first`` of the labels' targets: after every staged rating's sequence number.
_VOTES_FIRST, _RANKED_FIRST = 1 << 40, 1 << 41
# One vote per (item, unordered pair of models, sample, rater, criterion).
_VOTE_KEY = ("prompt_id, min(model_a, model_b), max(model_a, model_b), sample, rater,"
             " criterion")


class LabelStage:
    """Pair votes and ranked images staged for one import (on the ratings stage)."""

    def __init__(self, stage: Stage) -> None:
        self.stage, self.db = stage, stage.db
        create(self.db, _SCHEMA)

    def add_votes(self, file: int, votes: Sequence[tuple], keys: Sequence[str]) -> None:
        """Stage votes (:data:`concord.importers.votes.Vote` rows) under their item keys."""
        rows = [(file, v[0], k, *v[3:11], v[11], v[12]) for v, k in zip(votes, keys,
                                                                        strict=True)]
        self._insert("s_votes", _VOTE_COLUMNS, rows)
        self._texts((k, v[2]) for v, k in zip(votes, keys, strict=True) if v[2])

    def add_ranked(self, file: int, rows: Sequence[tuple]) -> None:
        """Stage ranked images (:data:`concord.importers.ranking_rows.Ranked` rows)."""
        self._insert("s_ranked", _RANKED_COLUMNS,
                     [(file, r[0], r[1], *r[3:]) for r in rows])
        self._texts((r[1], r[2]) for r in rows if r[2])

    def _insert(self, table: str, columns: Sequence[str], rows: list[tuple]) -> None:
        conn = self.db.conn
        with stage_writes(conn):
            marks = ", ".join("?" * (len(columns) + 1))
            conn.executemany(f"INSERT INTO stage.{table} (file, {', '.join(columns)}) VALUES"
                             f" ({marks})", rows)

    def _texts(self, pairs: Iterable[tuple[str, str]]) -> None:
        conn = self.db.conn
        with stage_writes(conn):
            conn.executemany("INSERT INTO stage.s_texts (key, text) VALUES (?, ?)"
                             " ON CONFLICT DO NOTHING", pairs)

    def add_comments(self, file: int, rows: Sequence[tuple]) -> None:
        """Stage comments: ``(line, unit, prompt_id, model, sample, rater, criterion, text)``
        (:func:`concord.importers.label_studio_labels.read_comments`)."""
        self._insert("s_comments", ("line", "unit", "prompt_id", "model", "sample", "rater",
                                    "criterion", "text"), [(file, *r) for r in rows])

    def counts(self) -> tuple[int, int]:
        """(votes, ranked images) staged."""
        return (self._count("s_votes"), self._count("s_ranked"))

    def rankings(self) -> int:
        """Rankings staged (after :meth:`group_rankings`)."""
        return self._count("s_rankings")

    def _count(self, table: str) -> int:
        return int(self.db.execute(f"SELECT COUNT(*) FROM stage.{table}").fetchone()[0])

    # --- checks ---------------------------------------------------------------------------

    def vote_duplicates(self, limit: int) -> Found:
        """Votes that repeat an earlier row's (item, pair of models, sample, rater,
        criterion): (file, line, prompt, a, b, rater, first file, first line)."""
        sql = (f"WITH f AS (SELECT MIN(seq) AS first, {_VOTE_KEY} AS k FROM stage.s_votes"
               f" GROUP BY {_VOTE_KEY} HAVING COUNT(*) > 1)")
        total = self.db.execute(
            f"SELECT COUNT(*) FROM stage.s_votes s WHERE seq NOT IN (SELECT MIN(seq) FROM"
            f" stage.s_votes GROUP BY {_VOTE_KEY})").fetchone()[0]
        if not total:
            return Found(0, [])
        rows = self.db.execute(
            sql + " SELECT s.file, s.line, s.prompt_id, s.model_a, s.model_b, s.rater,"
            " x.file, x.line FROM stage.s_votes s JOIN stage.s_votes x ON x.seq = (SELECT"
            " MIN(y.seq) FROM stage.s_votes y WHERE y.prompt_id = s.prompt_id AND"
            " min(y.model_a, y.model_b) = min(s.model_a, s.model_b) AND max(y.model_a,"
            " y.model_b) = max(s.model_a, s.model_b) AND y.sample = s.sample AND"
            " y.rater = s.rater AND y.criterion = s.criterion) WHERE x.seq < s.seq"
            " ORDER BY s.seq LIMIT ?", [limit]).fetchall()
        return Found(int(total), rows)

    def group_rankings(self) -> None:
        """One row per staged ranking (prompt, rater, criterion); each image's place is
        the mean of the places its tie takes (as the ranking screen stores ranks)."""
        conn = self.db.conn
        with stage_writes(conn):
            conn.execute(
                "INSERT INTO stage.s_rankings (prompt_id, rater, criterion, first, items,"
                " seconds, time, dimension) SELECT prompt_id, rater, criterion, MIN(seq),"
                " COUNT(*), MAX(seconds), MAX(time), MAX(dimension) FROM stage.s_ranked GROUP BY"
                " prompt_id, rater, criterion ORDER BY MIN(seq)")
            conn.execute(
                "UPDATE stage.s_ranked AS r SET ranking = g.n FROM stage.s_rankings g WHERE"
                " g.prompt_id = r.prompt_id AND g.rater = r.rater AND g.criterion = r.criterion")
            conn.execute(
                "UPDATE stage.s_ranked AS r SET place = w.place FROM (SELECT seq, RANK() OVER"
                " (PARTITION BY ranking ORDER BY rank) - 1 + (COUNT(*) OVER (PARTITION BY"
                " ranking, rank) + 1) / 2.0 AS place FROM stage.s_ranked) w WHERE w.seq = r.seq")
            conn.execute("CREATE INDEX stage.s_ranked_ranking ON s_ranked (ranking, model)")

    def ranking_problems(self, low: int, high: int, limit: int) -> Found:
        """Rankings with a model twice or with fewer than ``low`` / more than ``high``
        images: (file, line, prompt, rater, problem)."""
        sql = (
            # The model quoted as SQLite's quote() would (PostgreSQL has no quote()).
            " FROM (SELECT r.file, r.line, r.prompt_id, r.rater, 'model ''' ||"
            " replace(r.model, '''', '''''') || ''' is ranked twice in this ranking (first on"
            " line ' || x.line || ')' AS why,"
            " r.seq FROM stage.s_ranked r JOIN stage.s_ranked x ON x.ranking = r.ranking AND"
            " x.model = r.model AND x.seq < r.seq AND x.seq = (SELECT MIN(seq) FROM"
            " stage.s_ranked y WHERE y.ranking = r.ranking AND y.model = r.model)"
            " UNION ALL SELECT s.file, s.line, g.prompt_id, g.rater, 'a ranking needs '"
            " || :low || ' to ' || :high || ' images, this one has ' || g.items, g.first"
            " FROM stage.s_rankings g JOIN stage.s_ranked s ON s.seq = g.first"
            " WHERE g.items < :low OR g.items > :high) AS p")
        args = {"low": low, "high": high, "limit": limit}
        total = self.db.execute("SELECT COUNT(*)" + sql, args).fetchone()[0]
        rows = self.db.execute("SELECT file, line, prompt_id, rater, why" + sql +
                               " ORDER BY seq LIMIT :limit", args).fetchall()
        return Found(int(total), rows)

    def dimension_conflicts(self, study_id: int | None, limit: int) -> Found:
        """Items given two dimensions (by the labels, or unlike the study's prompt):
        (file, line, prompt, dimension)."""
        union = ("SELECT seq * 2 AS o, file, line, prompt_id, dimension FROM stage.s_votes"
                 " WHERE dimension IS NOT NULL UNION ALL SELECT seq * 2 + 1, file, line,"
                 " prompt_id, dimension FROM stage.s_ranked WHERE dimension IS NOT NULL")
        sql = (f" FROM ({union}) u WHERE EXISTS (SELECT 1 FROM ({union}) v WHERE"
               " v.prompt_id = u.prompt_id AND v.dimension <> u.dimension AND v.o < u.o)"
               " OR EXISTS (SELECT 1 FROM main.prompts p WHERE p.study_id = :study AND"
               " p.key = u.prompt_id AND p.dimension IS NOT NULL AND"
               " p.dimension <> u.dimension)")
        args = {"study": study_id, "limit": limit}
        total = self.db.execute("SELECT COUNT(*)" + sql, args).fetchone()[0]
        rows = self.db.execute("SELECT file, line, prompt_id, dimension" + sql +
                               " ORDER BY o LIMIT :limit", args).fetchall()
        return Found(int(total), rows)

    # --- targets --------------------------------------------------------------------------

    def add_targets(self) -> None:
        """The images and raters the labels name join the stage's targets and raters
        (after the ratings' own: ``first`` orders what is created by first appearance)."""
        conn = self.db.conn
        with stage_writes(conn):
            # ``WHERE true``: SQLite would read ON CONFLICT after a bare FROM as a join's ON.
            for model in ("model_a", "model_b"):
                conn.execute("INSERT INTO stage.s_targets (prompt_id, model, sample, first,"
                             f" dimension) SELECT prompt_id, {model}, sample, :votes + MIN(seq),"
                             f" MAX(dimension) FROM stage.s_votes WHERE true GROUP BY prompt_id,"
                             f" {model}, sample ON CONFLICT DO NOTHING", {"votes": _VOTES_FIRST})
            conn.execute("INSERT INTO stage.s_targets (prompt_id, model, sample, first,"
                         " dimension) SELECT prompt_id, model, sample, :ranked + MIN(seq),"
                         " MAX(dimension) FROM stage.s_ranked WHERE true GROUP BY prompt_id, model,"
                         " sample ON CONFLICT DO NOTHING", {"ranked": _RANKED_FIRST})
            conn.execute("INSERT INTO stage.s_raters (name, rater_id) SELECT rater, NULL FROM"
                         " stage.s_votes UNION SELECT rater, CAST(NULL AS INTEGER) FROM"
                         " stage.s_ranked WHERE true"
                         " ON CONFLICT DO NOTHING")

    def resolve_images(self) -> None:
        """Image ids of the votes and ranked images (after the targets were looked up)."""
        conn = self.db.conn
        with stage_writes(conn):
            for side, model in (("image_a", "model_a"), ("image_b", "model_b")):
                conn.execute(f"UPDATE stage.s_votes AS v SET {side} = t.image_id FROM"
                             f" stage.s_targets t WHERE t.prompt_id = v.prompt_id AND"
                             f" t.model = v.{model} AND t.sample = v.sample")
            conn.execute("UPDATE stage.s_ranked AS r SET image_id = t.image_id FROM"
                         " stage.s_targets t WHERE t.prompt_id = r.prompt_id AND t.model = r.model"
                         " AND t.sample = r.sample")

    def missing_images(self, limit: int) -> Found:
        """Labels naming an image the study does not have: (file, line, prompt, model,
        sample)."""
        sql = (" FROM (SELECT v.seq * 2 AS o, v.file, v.line, v.prompt_id, t.model, v.sample"
               " FROM stage.s_votes v JOIN stage.s_targets t ON t.prompt_id = v.prompt_id AND"
               " t.sample = v.sample AND t.model IN (v.model_a, v.model_b) WHERE t.image_id"
               " IS NULL UNION ALL SELECT r.seq * 2 + 1, r.file, r.line, r.prompt_id, r.model,"
               " r.sample FROM stage.s_ranked r JOIN stage.s_targets t ON"
               " t.prompt_id = r.prompt_id AND t.model = r.model AND t.sample = r.sample"
               " WHERE t.image_id IS NULL) AS m")
        total = self.db.execute("SELECT COUNT(*)" + sql).fetchone()[0]
        rows = self.db.execute("SELECT file, line, prompt_id, model, sample" + sql +
                               " ORDER BY o LIMIT ?", [limit]).fetchall()
        return Found(int(total), rows)

    def unscheduled_pairs(self, study_id: int, limit: int) -> Found:
        """Votes on two images the study has no pair of: (file, line, prompt, a, b)."""
        sql = (" FROM stage.s_votes v WHERE NOT EXISTS (SELECT 1 FROM main.pairs p WHERE"
               " p.study_id = :study AND p.image_a = min(v.image_a, v.image_b) AND"
               " p.image_b = max(v.image_a, v.image_b))")
        args = {"study": study_id, "limit": limit}
        total = self.db.execute("SELECT COUNT(*)" + sql, args).fetchone()[0]
        rows = self.db.execute("SELECT file, line, prompt_id, model_a, model_b" + sql +
                               " ORDER BY seq LIMIT :limit", args).fetchall()
        return Found(int(total), rows)


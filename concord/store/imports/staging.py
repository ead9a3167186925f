"""The staging area of a ratings import: a private temporary SQLite database.

Rows read from the input files are written here first, so that every check that needs
the whole file (duplicates, rubric fit, unknown targets) runs as SQL on disk with bounded
memory, and the main database is not touched (not even locked) until everything is valid.
On SQLite the stage is attached to the import's connection as ``stage`` with an empty file
name: SQLite keeps it in an anonymous temporary file that disappears when the connection
closes or the process dies. On PostgreSQL it is the session's temporary schema (the store's
``stage.`` is ``pg_temp.`` there, concord.store.pg_sql.translate), emptied when the stage closes:
the connection goes back to a pool.
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from concord.store import engine

# (line, prompt_id, model, sample, rater, criterion, value, seconds, dimension)
Row = tuple[int, str, str, int, str, str, float, float | None, str | None]

_SCHEMA = """
CREATE TABLE stage.s_rows (
    seq INTEGER PRIMARY KEY, file INTEGER NOT NULL, line INTEGER NOT NULL,
    prompt_id TEXT NOT NULL, model TEXT NOT NULL, sample INTEGER NOT NULL,
    rater TEXT NOT NULL, criterion TEXT NOT NULL, value DOUBLE PRECISION NOT NULL,
    seconds DOUBLE PRECISION,
    dimension TEXT);
CREATE TABLE stage.s_targets (
    n INTEGER PRIMARY KEY, prompt_id TEXT NOT NULL, model TEXT NOT NULL,
    sample INTEGER NOT NULL, first BIGINT NOT NULL, dimension TEXT, image_id INTEGER);
CREATE UNIQUE INDEX stage.s_targets_key ON s_targets (prompt_id, model, sample);
CREATE TABLE stage.s_raters (name TEXT PRIMARY KEY, rater_id INTEGER) WITHOUT ROWID;
CREATE TABLE stage.s_texts (key TEXT PRIMARY KEY, text TEXT NOT NULL) WITHOUT ROWID
"""
_ROWS_PER_INSERT = 100
_COLUMNS = ("line", "prompt_id", "model", "sample", "rater", "criterion", "value", "seconds",
            "dimension")
_KEY = "prompt_id, model, sample, rater, criterion"
# The dimension a row is judged under: the study's prompt's, else the row's own.
_DIMENSION = ("COALESCE((SELECT p.dimension FROM main.prompts p WHERE p.study_id = :study"
              " AND p.key = s.prompt_id), s.dimension)")

# Per prompt, the dimension of its first row that has one (d1) and the first row whose
# dimension is another (bad). A row's dimension differs from some earlier row's exactly when
# it is not d1, or the row comes after ``bad``: two passes over the rows, where asking each
# row about the earlier rows of its prompt was quadratic in a prompt's rows (100,000 rows of
# 1,000 per prompt: 73 s).
_DIMENSION_FIRSTS = (
    "WITH f AS (SELECT r.prompt_id, r.dimension AS d1 FROM stage.s_rows r WHERE r.seq IN"
    " (SELECT MIN(seq) FROM stage.s_rows WHERE dimension IS NOT NULL GROUP BY prompt_id)),"
    " b AS (SELECT x.prompt_id, MIN(x.seq) AS bad FROM stage.s_rows x JOIN f"
    " ON f.prompt_id = x.prompt_id WHERE x.dimension IS NOT NULL AND x.dimension <> f.d1"
    " GROUP BY x.prompt_id) ")
_DIMENSION_CONFLICTS = (
    " FROM stage.s_rows s JOIN f ON f.prompt_id = s.prompt_id LEFT JOIN b"
    " ON b.prompt_id = s.prompt_id WHERE s.dimension IS NOT NULL AND (s.dimension <> f.d1"
    " OR s.seq > b.bad OR EXISTS (SELECT 1 FROM main.prompts p WHERE p.study_id = :study"
    " AND p.key = s.prompt_id AND p.dimension IS NOT NULL AND p.dimension <> s.dimension))")


def _insert_sql(file: int, columns: Sequence[list]) -> tuple[str, list[list]]:
    """The INSERT for a chunk, with a column that holds one value throughout (no sample, no
    seconds, no dimension in most files) written as a literal: fewer values to bind."""
    values, varying = [str(int(file))], []
    for name, col in zip(_COLUMNS, columns, strict=True):
        first = col[0]
        if name in ("sample", "seconds", "dimension") and (first is None or type(first) is int) \
                and col.count(first) == len(col):
            values.append("NULL" if first is None else str(first))
        else:
            values.append("?")
            varying.append(col)
    return (f"INSERT INTO stage.s_rows (file, {', '.join(_COLUMNS)}) VALUES"
            f" ({', '.join(values)})"), varying


@dataclass(frozen=True, slots=True)
class Group:
    """Rows sharing (dimension, criterion, value): how many, and where the first one is."""

    dimension: str | None
    criterion: str
    value: float
    rows: int
    file: int
    line: int


@dataclass(frozen=True, slots=True)
class Found:
    """Some rows a check found (at most ``limit`` of them) and how many there are."""

    total: int
    rows: list[tuple]


class Stage:
    """Staged rows of one import; every method runs on the import's own connection."""

    def __init__(self, db: Database, max_groups: int = 10_000) -> None:
        self.db = db
        # (dimension, criterion, value) -> [rows, file, line of the first]; kept while
        # staging (cheap in Python, a GROUP BY over the stage is not), capped.
        self.tally: dict[tuple[str | None, str, float], list[int]] = {}
        self.max_groups = max_groups
        self.overflow = False  # more groups than max_groups: the tally is incomplete
        self.unique = False  # the rating key has no duplicate (known after index())
        self.rater_names: set[str] | None = set()  # None: too many to keep (read from SQL)
        if engine.is_postgres(db):
            # Temporary tables a previous stage of this pooled connection left (its process
            # was interrupted before close) would clash with the new ones.
            db.execute("DISCARD TEMP")
        else:
            db.execute("ATTACH DATABASE '' AS stage")
            # Nothing here needs to survive a crash: no syncs, the journal in memory (kept,
            # so that a failed statement, like a UNIQUE index on a file with duplicates,
            # rolls back).
            for pragma in ("journal_mode = MEMORY", "synchronous = OFF", "cache_size = -32000"):
                db.execute(f"PRAGMA stage.{pragma}")
        create(db, _SCHEMA)

    def close(self) -> None:
        """Drop the stage (its temporary file, or its temporary tables, go with it)."""
        if self.db.conn.in_transaction:
            self.db.conn.rollback()
        self.db.execute("DISCARD TEMP" if engine.is_postgres(self.db) else "DETACH DATABASE stage")

    def add(self, file: int, columns: Sequence[list]) -> None:
        """Append rows read from input file number ``file``, given as the nine columns of
        :data:`Row` (one list each)."""
        conn = self.db.conn
        with stage_writes(conn):  # deferred: only the stage is written, the main file is free
            one, varying = _insert_sql(file, columns)
            rows = list(zip(*varying, strict=True))
            # Many rows per statement: a third less time than one statement per row.
            whole = len(rows) // _ROWS_PER_INSERT * _ROWS_PER_INSERT
            many = one + (", " + one.rpartition(" VALUES ")[2]) * (_ROWS_PER_INSERT - 1)
            conn.executemany(many, (
                tuple(itertools.chain.from_iterable(rows[i:i + _ROWS_PER_INSERT]))
                for i in range(0, whole, _ROWS_PER_INSERT)))
            conn.executemany(one, rows[whole:])
        if self.rater_names is not None:
            self.rater_names.update(columns[4])
            if len(self.rater_names) > self.max_groups:
                self.rater_names = None
        lines, criteria, values, dims = columns[0], columns[5], columns[6], columns[8]
        for key, n in Counter(zip(dims, criteria, values, strict=True)).items():
            seen = self.tally.get(key)
            if seen is not None:
                seen[0] += n
            elif len(self.tally) < self.max_groups:
                at = next(i for i, k in enumerate(zip(dims, criteria, values, strict=True))
                          if k == key)
                self.tally[key] = [n, file, lines[at]]
            else:
                self.overflow = True

    def tallied(self, *, by_dimension: bool) -> list[Group]:
        """The groups of :meth:`groups` as the rows named them (no study lookup)."""
        if not by_dimension:
            merged: dict[tuple[None, str, float], list[int]] = {}
            for (_, crit, value), (n, f, line) in self.tally.items():
                seen = merged.setdefault((None, crit, value), [0, f, line])
                seen[0] += n
                seen[1:] = min(seen[1:], [f, line])
            return [Group(*k, *v) for k, v in merged.items()]
        return [Group(*k, *v) for k, v in self.tally.items()]

    def count(self) -> int:
        """Rows staged."""
        return int(self.db.execute("SELECT COUNT(*) FROM stage.s_rows").fetchone()[0])

    def groups(self, study_id: int | None, *, by_dimension: bool, limit: int,
               exclude: Sequence[str] = ()) -> list[Group]:
        """(dimension, criterion, value) groups, at most ``limit`` (a scale has few values),
        leaving out the criteria named in ``exclude`` (continuous ones, checked apart)."""
        dim = _DIMENSION if by_dimension else "NULL"
        names = ", ".join("?" * len(exclude))
        where = f" WHERE s.criterion NOT IN ({names})" if exclude else ""
        sql = (f"SELECT {dim} AS d, s.criterion, s.value, COUNT(*), MIN(s.seq)"
               f" FROM stage.s_rows s{where} GROUP BY d, s.criterion, s.value LIMIT ?")
        out = self.db.execute(sql.replace(":study", "?"), [
            *([study_id] if by_dimension else []), *exclude, limit]).fetchall()
        found = self._where([r[4] for r in out])
        return [Group(d, c, v, n, *found[seq]) for d, c, v, n, seq in out]

    def _where(self, seqs: Iterable[int]) -> dict[int, tuple[int, int]]:
        """(file, line) of staged rows by their sequence number."""
        seqs = list(seqs)
        out: dict[int, tuple[int, int]] = {}
        for start in range(0, len(seqs), 500):
            part = seqs[start:start + 500]
            marks = ", ".join("?" * len(part))
            out.update((s, (f, ln)) for s, f, ln in self.db.execute(
                f"SELECT seq, file, line FROM stage.s_rows WHERE seq IN ({marks})", part))
        return out

    def off_scale(self, names: Sequence[str], scale: tuple[float, float, float | None],
                  dimensions: tuple[Sequence[str], bool], study_id: int | None,
                  limit: int) -> Found:
        """Rows of the criteria ``names`` whose value is off a continuous scale (``low``,
        ``high``, ``step``; the step grid to 1e-9 of a step): (file, line, criterion,
        value). ``dimensions``: (the dimensions, whether rows must be in them or outside
        them: a default rubric covers the dimensions without a rubric of their own)."""
        low, high, step = scale
        dims, inside = dimensions
        off = "s.value < :low - 1e-12 OR s.value > :high + 1e-12"
        if step is not None:
            grid = "(s.value - :low) / :step"
            off += f" OR abs({grid} - round({grid})) > 1e-9 * max(1.0, abs({grid}))"
        marks = ", ".join(f":n{i}" for i in range(len(names)))
        where = f"s.criterion IN ({marks}) AND ({off}){_in_dimensions(dims, inside)}"
        args = {"low": low, "high": high, "step": step, "study": study_id, "limit": limit,
                **{f"n{i}": n for i, n in enumerate(names)},
                **{f"d{i}": d for i, d in enumerate(dims)}}
        total = self.db.execute(f"SELECT COUNT(*) FROM stage.s_rows s WHERE {where}",
                                args).fetchone()[0]
        rows = self.db.execute(f"SELECT s.file, s.line, s.criterion, s.value FROM stage.s_rows"
                               f" s WHERE {where} ORDER BY s.seq LIMIT :limit", args).fetchall()
        return Found(int(total), rows)

    def rename_in(self, name: str, key: str, dimensions: tuple[Sequence[str], bool],
                  study_id: int | None) -> None:
        """Store criterion ``name`` (an alias) as ``key`` in the rows of ``dimensions``
        (as :meth:`off_scale` takes them)."""
        dims, inside = dimensions
        conn = self.db.conn
        with stage_writes(conn):
            conn.execute(f"UPDATE stage.s_rows AS s SET criterion = :key WHERE s.criterion = :name"
                         f"{_in_dimensions(dims, inside)}",
                         {"key": key, "name": name, "study": study_id,
                          **{f"d{i}": d for i, d in enumerate(dims)}})

    def rename_criteria(self, renames: Mapping[tuple[str | None, str], str], study_id: int | None,
                        *, by_dimension: bool) -> None:
        """Store aliases under their criterion key (``(dimension, name) -> key``)."""
        conn = self.db.conn
        with stage_writes(conn):
            for (dimension, name), key in renames.items():
                dim = f"{_DIMENSION} IS NOT DISTINCT FROM :dim AND " if by_dimension else ""
                conn.execute(f"UPDATE stage.s_rows AS s SET criterion = :key WHERE {dim}"
                             " s.criterion = :name",
                             {"key": key, "name": name, "dim": dimension, "study": study_id})

    def index(self) -> None:
        """Index the rating key (after criteria are renamed; before the checks below).

        Built UNIQUE first: when that succeeds there is no duplicate rating to look for.
        """
        try:
            self.db.execute(f"CREATE UNIQUE INDEX stage.s_rows_key ON s_rows ({_KEY})")
            self.unique = True
        except sqlite3.IntegrityError:
            self.db.execute(f"CREATE INDEX stage.s_rows_key ON s_rows ({_KEY})")
            self.unique = False

    def duplicates(self, limit: int) -> Found:
        """Rows that rate a (prompt, model, sample, rater, criterion) rated on an earlier row."""
        if self.unique:
            return Found(0, [])
        total = self.db.execute(
            f"SELECT COALESCE(SUM(n - 1), 0) FROM (SELECT COUNT(*) AS n FROM stage.s_rows"
            f" GROUP BY {_KEY} HAVING COUNT(*) > 1) AS d").fetchone()[0]
        if not total:
            return Found(0, [])
        first = ("SELECT MIN(x.seq) FROM stage.s_rows x WHERE x.prompt_id = s.prompt_id AND"
                 " x.model = s.model AND x.sample = s.sample AND x.rater = s.rater AND"
                 " x.criterion = s.criterion")
        rows = self.db.execute(
            "SELECT s.file, s.line, s.prompt_id, s.model, s.rater, s.criterion, f.file, f.line"
            f" FROM stage.s_rows s JOIN stage.s_rows f ON f.seq = ({first})"
            " WHERE f.seq < s.seq ORDER BY s.seq LIMIT ?", [limit]).fetchall()
        return Found(int(total), rows)

    def dimension_conflicts(self, study_id: int | None, limit: int) -> Found:
        """Rows whose dimension differs from an earlier row's, or from the study's prompt."""
        args = {"study": study_id, "limit": limit}
        total = self.db.execute(_DIMENSION_FIRSTS + "SELECT COUNT(*)" + _DIMENSION_CONFLICTS,
                                args).fetchone()[0]
        rows = self.db.execute(_DIMENSION_FIRSTS + "SELECT s.file, s.line, s.prompt_id,"
                               " s.dimension" + _DIMENSION_CONFLICTS +
                               " ORDER BY s.seq LIMIT :limit", args).fetchall()
        return Found(int(total), rows)

    def has_dimensions(self) -> bool:
        """Whether any staged row names a dimension."""
        return self.db.execute("SELECT 1 FROM stage.s_rows WHERE dimension IS NOT NULL"
                               " LIMIT 1").fetchone() is not None

    def resolve(self, study_id: int | None) -> None:
        """Fill the distinct targets and raters with the ids they already have (or NULL)."""
        conn = self.db.conn
        with stage_writes(conn):
            # In key order along the index (no sort); ``first`` is the row that names it first.
            dimension = "MAX(dimension)" if self.has_dimensions() else "NULL"
            conn.execute("INSERT INTO stage.s_targets (prompt_id, model, sample, first,"
                         f" dimension) SELECT prompt_id, model, sample, MIN(seq), {dimension}"
                         " FROM stage.s_rows GROUP BY prompt_id, model, sample")
            if self.rater_names is None:
                conn.execute("INSERT INTO stage.s_raters SELECT DISTINCT rater,"
                             " CAST(NULL AS INTEGER) FROM stage.s_rows")
            else:
                conn.executemany("INSERT INTO stage.s_raters VALUES (?, NULL)",
                                 [(name,) for name in self.rater_names])
        self.refresh_ids(study_id)

    def refresh_ids(self, study_id: int | None) -> None:
        """Look up ids of targets and raters that have none yet (after some were created)."""
        conn = self.db.conn
        with stage_writes(conn):
            conn.execute(
                "UPDATE stage.s_targets AS t SET image_id = (SELECT i.id FROM main.prompts p"
                " JOIN main.models m ON m.study_id = p.study_id AND m.name = t.model"
                " JOIN main.images i ON i.prompt_id = p.id AND i.model_id = m.id"
                " AND i.sample = t.sample WHERE p.study_id = ? AND p.key = t.prompt_id)"
                " WHERE image_id IS NULL", [study_id])
            conn.execute("UPDATE stage.s_raters AS r SET rater_id = (SELECT x.id FROM main.raters x"
                         " WHERE x.name = r.name) WHERE rater_id IS NULL")

    def missing_targets(self, limit: int) -> Found:
        """Targets that are not images of the study, with the first row naming each."""
        total = self.db.execute("SELECT COUNT(*) FROM stage.s_targets WHERE image_id IS NULL"
                                ).fetchone()[0]
        rows = self.db.execute(
            "SELECT (SELECT MIN(s.seq) FROM stage.s_rows s WHERE s.prompt_id = t.prompt_id AND"
            " s.model = t.model AND s.sample = t.sample) AS first, t.prompt_id, t.model,"
            " t.sample FROM stage.s_targets t WHERE t.image_id IS NULL ORDER BY first LIMIT ?",
            [limit]).fetchall()
        where = self._where(r[0] for r in rows)
        return Found(int(total), [(*where[r[0]], *r[1:]) for r in rows])

    def raters(self) -> int:
        """How many distinct raters the staged rows name."""
        return int(self.db.execute("SELECT COUNT(*) FROM stage.s_raters").fetchone()[0])


@contextlib.contextmanager
def stage_writes(conn: Any) -> Iterator[None]:
    """A transaction on the import's connection that writes only the stage (a plain BEGIN:
    the main database stays free for raters), rolled back when the block fails: on
    PostgreSQL a failed statement leaves the transaction unusable."""
    conn.execute("BEGIN")
    try:
        yield
    except BaseException:
        conn.rollback()
        raise
    conn.execute("COMMIT")


def create(db: Database, schema: str) -> None:
    """Create the stage tables of ``schema`` (statements split by ``;`` and a newline).

    A row number is ``INTEGER PRIMARY KEY`` (SQLite's rowid, numbered in insert order);
    PostgreSQL numbers such a column only as an identity column.
    """
    if engine.is_postgres(db):
        schema = schema.replace("INTEGER PRIMARY KEY",
                                "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
    for statement in schema.split(";\n"):
        db.execute(statement)


def _in_dimensions(dims: Sequence[str], inside: bool) -> str:
    """SQL (`` AND …``): the row's dimension is one of ``dims`` (``inside``), or it is
    none of them (a default rubric: every other row); the values bind as ``:d0``, …"""
    if not dims:
        return "" if not inside else " AND 0"
    test = f"{_DIMENSION} IN ({', '.join(f':d{i}' for i in range(len(dims)))})"
    return f" AND {test}" if inside else f" AND ({_DIMENSION} IS NULL OR NOT {test})"

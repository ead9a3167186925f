"""Pair votes and rankings in an import: read, check and write them beside the ratings.

``import-pairs`` and ``import-rankings`` carry only these; ``import-ratings --format csv``
carries them too when the file is Concord's own export (a ``kind`` column with ``pair``
and ``ranking`` rows). They share the ratings import's stage and pending batch
(:mod:`concord.services.imports.ratings`), so a file is imported whole or not at all.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from concord.errors import InputError, Problem, ProblemLog
from concord.importers import label_studio_labels, ranking_rows, votes
from concord.importers.records import is_json
from concord.importers.tables import regular_file_problem
from concord.store import studies as study_store
from concord.store.imports import label_writes
from concord.store.imports.label_stage import LabelStage
from concord.store.imports.rating_writes import Pacer, Written
from concord.store.imports.staging import Found, Stage

SHOWN = 50  # problems listed per check; the rest are counted
# Formats that carry only pair votes or rankings (``import-pairs``, ``import-rankings``).
LABEL_FORMATS = {"pairs": ("pair",), "rankings": ("ranking",)}


@dataclass(slots=True)
class LabelCounts:
    """What a label import read and wrote."""

    votes: int = 0
    rankings: int = 0
    pairs_created: int = 0
    written: dict[str, Written] = field(default_factory=dict)  # "pair" / "ranking"
    comments_read: int = 0
    comments: int = 0  # stored (one per label revision)


def part_for(stage: Stage, fmt: str, path: Path) -> LabelPart | None:
    """The pair votes and rankings an import carries: all of a ``pairs``/``rankings``
    file, and those of Concord's own CSV export."""
    if fmt in LABEL_FORMATS:
        return LabelPart(stage, LABEL_FORMATS[fmt])
    if fmt == "csv" and has_labels(path):
        return LabelPart(stage, ("pair", "ranking"), mixed=True)
    if fmt == "label-studio":  # Pairwise and Ranker results beside the scores
        return LabelPart(stage, ("pair", "ranking"), label_studio=True)
    return None


def new_settings(stage: Stage, fmt: str, labels: LabelPart | None) -> dict:
    """Settings of a study an import creates (no manifest: no images with files)."""
    what = "votes" if fmt == "pairs" else fmt
    kind = "ratings" if stage.count() or labels is None else what
    return {"raters_per_item": max(stage.raters(), 1), "layout": f"{kind}-only ({fmt})"}


def protocol(stage: Stage, labels: LabelPart | None) -> str:
    """The protocol of a study made by an import: what its labels are."""
    if labels is None or stage.count():
        return "score"
    return "pair" if labels.counts.votes else "rank"


def wrote(counts: LabelCounts) -> bool:
    """Whether an import wrote any pair, judgment or ranking."""
    return bool(counts.pairs_created or counts.comments) or any(
        w.added or w.changed for w in counts.written.values())


def has_labels(path: Path) -> bool:
    """Whether a ratings CSV is Concord's export with a ``kind`` column (so it may hold
    pair and ranking rows): read from its header line only."""
    if is_json(path) or path.suffix.lower() == ".parquet" or \
            regular_file_problem(path) is not None:
        return False  # a pipe would block the open below; the ratings reader reports it
    try:
        with path.open(encoding="utf-8", errors="replace", newline="") as f:
            header = f.readline(1 << 16)
    except OSError:
        return False
    cells = header.lstrip("\ufeff").replace("\t", ",").split(",")
    return "kind" in {c.strip().strip('"') for c in cells}


class LabelPart:
    """The pair votes and/or rankings of one import."""

    def __init__(self, stage: Stage, kinds: tuple[str, ...], *, mixed: bool = False,
                 label_studio: bool = False) -> None:
        # mixed: a file of several kinds (Concord's export): only rows of a kind are
        # checked for that kind's columns; label_studio: a Label Studio JSON export
        self.stage, self.kinds, self.mixed = stage, kinds, mixed
        self.label_studio = label_studio
        self.labels = LabelStage(stage)
        self.counts = LabelCounts()

    def read(self, index: int, path: Path, log: ProblemLog, skipped: Counter[str]) -> None:
        """Stage the file's votes and/or rankings; problems go to ``log``."""
        ignored: Counter[str] = Counter()
        if self.mixed and log:
            return  # the ratings reader already reported this file's broken rows
        stage = {"pair": lambda rows: self.labels.add_votes(index, rows,
                                                            [_item_key(v) for v in rows]),
                 "ranking": lambda rows: self.labels.add_ranked(index, rows)}
        for kind in self.kinds:
            for rows in self._chunks(path, kind, log, ignored):
                if not log:
                    stage[kind](rows)
        if self.label_studio and not log:  # text results: comments on the labels beside
            for rows in label_studio_labels.read_comments(path, log):
                self.labels.add_comments(index, rows)
                self.counts.comments_read += len(rows)
        for kind, n in ignored.items():  # rows another reader of this import takes
            if kind not in ("rating", *self.kinds):
                skipped[f"{kind} row"] += n
        self.counts.votes = self.labels.counts()[0]
        if "ranking" in self.kinds:
            self.labels.group_rankings()
            self.counts.rankings = self.labels.rankings()

    def _chunks(self, path: Path, kind: str, log: ProblemLog,
                ignored: Counter[str]) -> Iterator[list[tuple]]:
        if self.label_studio:  # one JSON document: its file problems are reported once
            return iter(()) if log else label_studio_labels.read_chunks(path, kind, log)
        reader = votes.read_chunks if kind == "pair" else ranking_rows.read_chunks
        return reader(path, log, ignored, header=not self.mixed)

    def empty(self) -> bool:
        """Whether no label was staged (comments alone are not labels)."""
        return not (self.counts.votes or self.counts.rankings)

    def check(self, study: study_store.Study | None, files: list[str]) -> None:
        """Every check of the staged labels; InputError naming file, row and field."""
        log = ProblemLog()
        sid = study.id if study else None
        _report(log, files, self.labels.vote_duplicates(SHOWN), "criterion",
                lambda p, a, b, rater, ff, fl: (
                    f"second vote of {rater!r} on {a!r} vs {b!r} for {p!r} (first on line "
                    f"{fl}{'' if ff == 0 else ' of ' + files[ff]})"))
        _report(log, files, self.labels.ranking_problems(2, ranking_rows.MAX_RANKED, SHOWN),
                "model", lambda p, rater, why: f"ranking of {p!r} by {rater!r}: {why}")
        _report(log, files, self.labels.dimension_conflicts(sid, SHOWN), "dimension",
                lambda p, d: f"item {p!r} is given dimension {d!r}, but it has another one"
                             " (earlier in the file or in the study)")
        log.raise_if_any()
        self.labels.add_targets()
        self.stage.refresh_ids(sid)
        if study is not None and study.root is not None:
            self._check_manifest_study(study, files)

    def _check_manifest_study(self, study: study_store.Study, files: list[str]) -> None:
        """A study with image files takes labels on its own images and scheduled pairs."""
        log = ProblemLog()
        _report(log, files, self.labels.missing_images(SHOWN), "prompt_id",
                lambda p, m, s: f"no image of {m!r} for {p!r} (sample {s}) in study "
                                f"{study.name!r}")
        log.raise_if_any()
        self.labels.resolve_images()  # every image exists: the pairs can be looked up
        _report(log, files, self.labels.unscheduled_pairs(study.id, SHOWN), "model_b",
                lambda p, a, b: f"{a!r} vs {b!r} for {p!r} is not a pair of study "
                                f"{study.name!r} (its pairs come from its design; import "
                                "votes on other pairs into a new study)")
        log.raise_if_any()

    def write(self, pacer: Callable[[], Pacer], study_id: int, *, compare: bool) -> None:
        """Pairs (where the study lacks them), judgments and rankings into the batch,
        after the targets were created and looked up again."""
        self.labels.resolve_images()
        if self.counts.votes:
            self.counts.pairs_created = label_writes.create_pairs(pacer(), study_id)
            self.counts.written["pair"] = label_writes.write_votes(pacer(), study_id,
                                                                   compare=compare)
        if self.counts.rankings:
            self.counts.written["ranking"] = label_writes.write_rankings(pacer(), study_id,
                                                                         compare=compare)

    def write_comments(self, pacer: Callable[[], Pacer], study_id: int) -> None:
        """The comments, after every label of the import is written (they attach to the
        labels' revisions)."""
        if self.counts.comments_read:
            self.counts.comments = label_writes.write_comments(pacer(), study_id)


def _item_key(vote: votes.Vote) -> str:
    """The item a vote is about: its ``prompt_id``; without one the vote is an item of its
    own, keyed by ``vote_id`` or else by who voted on which models when (the line stands in
    for the time when there is none), so importing a grown log again adds only its new
    votes."""
    if vote[1] is not None:
        return vote[1]
    if vote[13] is not None:
        return f"vote:{vote[13]}"
    when = vote[11] if vote[11] is not None else f"line {vote[0]}"
    text = "\x00".join((vote[7], vote[8], vote[3], vote[4], when))
    return "vote:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def _report(log: ProblemLog, files: list[str], found: Found, field_name: str,
            message: Callable[..., str]) -> None:
    for file, line, *rest in found.rows:
        log.add(Problem(files[file], message(*rest), row=line, field=field_name))
    log.count += found.total - len(found.rows)


def nothing_found(path: Path) -> InputError:
    """The error of an input without a single label."""
    return InputError([Problem(str(path), "no ratings, rankings or pair votes found")])

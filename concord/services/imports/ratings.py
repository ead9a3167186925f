"""``import-ratings``: read, check, then write ratings without ever blocking raters.

1. *Stage*: the input is read in chunks (``concord.importers``) into a private temporary
   database (``concord.store.imports.staging``); memory stays bounded and the main database is
   not touched.
2. *Check*: the rubric (given, the study's, or inferred), every row against it, duplicate
   ratings, prompt dimensions, unknown targets: all as SQL over the stage. Any problem
   stops the import here; nothing was written.
3. *Write*: a pending batch (``concord.store.imports.batches``) gets the new study (hidden),
   targets, raters and ratings in short paced transactions; readers do not see any of it.
4. *Publish*: one short transaction makes it all visible at once. A failure or a kill in
   3 leaves only an invisible batch, which the next import removes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlite_utils import Database

from concord.errors import ConcordError, InputError, NotFoundError, Problem, ProblemLog
from concord.importers import imagenhub_tsv, label_studio, ratings_csv
from concord.services import rubric_choice
from concord.services.imports import continuous_check, pairs_rankings, rubric_fit
from concord.services.imports.pairs_rankings import LabelCounts, LabelPart
from concord.services.imports.phases import Timer, no_cyclic_gc
from concord.services.rubric_choice import Choice
from concord.store import studies as study_store
from concord.store.db import audit, transaction
from concord.store.imports import batches, rating_writes
from concord.store.imports.staging import Group, Stage

MAX_GROUPS = 10_000  # distinct (criterion, value) pairs: far more than any rating scale
FORMATS = ("csv", "imagenhub", "label-studio", *pairs_rankings.LABEL_FORMATS)


@dataclass(slots=True)
class RatingsImport:
    """What an import of ratings did."""

    study: str
    created_study: bool = False
    rows: int = 0
    added: int = 0
    unchanged: int = 0
    changed: int = 0
    rubric: str = ""  # which rubric the study uses now, and why (given, kept, inferred)
    skipped: dict[str, int] = field(default_factory=dict)  # results left out, per type
    labels: LabelCounts = field(default_factory=LabelCounts)  # pair votes and rankings
    seconds: dict[str, tuple[float, float]] = field(default_factory=dict)  # phase: wall, CPU


def import_ratings(db: Database, study_name: str, fmt: str, path: Path, *,
                   rubric: Sequence[str] = (), criteria: Sequence[str] = (),
                   actor: str = "cli") -> RatingsImport:
    """Import ratings; a missing study is created as a ratings-only study.

    Args:
        db: The database.
        study_name: Target study (created when missing).
        fmt: ``csv``, ``imagenhub``, ``label-studio``, ``pairs`` or ``rankings``.
        path: The CSV/TSV file, a folder of ImagenHub TSVs, a Label Studio JSON export,
            or a CSV/TSV/JSON Lines file of pair votes or rankings.
        rubric: ``--rubric`` values: a rubric id, or ``DIMENSION=ID``.
        criteria: ``--criteria`` values: inline scales like ``likert=1..5``.
        actor: Who is importing (audit log).

    Raises:
        InputError: A problem with the input; nothing was written.
        ConcordError: A bad option, or another import writing into the same study.
    """
    if fmt not in FORMATS:
        raise ConcordError(f"unknown ratings format {fmt!r} (use {', '.join(FORMATS)})")
    given = rubric_choice.explicit(rubric, criteria)
    batches.discard_stale(db)
    study = _find(db, study_name)
    stage, timer = Stage(db, max_groups=MAX_GROUPS), Timer()
    try:
        labels = pairs_rankings.part_for(stage, fmt, Path(path))
        with timer("read"):
            skipped: Counter[str] = Counter()
            files = _stage_files(stage, fmt, Path(path), skipped, labels)
        with timer("check"):
            choice = _check(stage, study, fmt, files, given) if stage.count() else \
                _no_ratings_choice(study, given)
            if labels is not None:
                labels.check(study, files)
        with timer("write"):
            summary = _write(db, stage, study, study_name, fmt, Path(path), choice, actor,
                             labels)
    finally:
        stage.close()
    summary.seconds = timer.seconds
    summary.skipped = dict(skipped)
    return summary


def _no_ratings_choice(study: study_store.Study | None, given: Choice | None) -> Choice:
    """An import without ratings keeps the study's rubric (or the one given)."""
    if study is not None and (study.rubric or study.settings.get("criteria")):
        return Choice(rubric_choice.study_rubrics(study), study.rubric, {}, "")
    if given is not None:
        return given
    return Choice(rubric_choice.StudyRubrics(None), None, {}, "")


def _find(db: Database, name: str) -> study_store.Study | None:
    try:
        return study_store.get_study(db, name)
    except NotFoundError:
        return None


def _stage_files(stage: Stage, fmt: str, path: Path, skipped: Counter[str],
                 labels: LabelPart | None) -> list[str]:
    """Read every input file into the stage; raise with every problem found."""
    log = ProblemLog()
    paths = _inputs(fmt, path)
    with no_cyclic_gc():
        for index, file in enumerate(paths):
            if fmt not in pairs_rankings.LABEL_FORMATS:
                for rows in _chunks(fmt, file, log, skipped):
                    if not log:  # after the first problem, only read on to count them all
                        stage.add(index, rows)
            if labels is not None:
                labels.read(index, file, log, skipped)
    log.raise_if_any()
    if stage.count() == 0 and (labels is None or labels.empty()):
        what = "no ratings found" if labels is None else \
            "no ratings, rankings or pair votes found"
        raise InputError([Problem(str(path), what)])
    return [str(p) for p in paths]


def _inputs(fmt: str, path: Path) -> list[Path]:
    if fmt == "imagenhub" and path.is_dir():
        return imagenhub_tsv.rating_files(path)
    return [path]


def _chunks(fmt: str, path: Path, log: ProblemLog,
            skipped: Counter[str]) -> Iterator[Sequence[list]]:
    """Chunks of rows as the columns of concord.importers.ratings_csv.Columns."""
    if fmt == "imagenhub":
        return imagenhub_tsv.read_rating_chunks(path, log)
    if fmt == "label-studio":  # tasks become ratings-CSV rows (row = the task's index)
        return label_studio.read_chunks(path, log, skipped=skipped)
    return ratings_csv.read_chunks(path, log)


def _check(stage: Stage, study: study_store.Study | None, fmt: str, files: list[str],
           given: Choice | None) -> Choice:
    """Choose the rubric(s), then check every row; raise with what is wrong."""
    sid = study.id if study else None
    cache: dict[bool, list[Group]] = {}

    def groups_by(by_dimension: bool) -> list[Group]:
        if by_dimension not in cache:
            cache[by_dimension] = _groups(stage, sid, by_dimension, files[0])
        return cache[by_dimension]

    choice = _choose(study, fmt, files, given, groups_by)
    by_dim = bool(choice.rubrics.by_dimension)
    log = ProblemLog()
    sliders = continuous_check.names(choice.rubrics)
    if sliders:  # checked by range: their values are too many for the groups
        continuous_check.check(stage, choice.rubrics, sid, files, log)
        groups = _groups(stage, sid, by_dim, files[0], exclude=sliders)
    else:
        groups = groups_by(by_dim)
    renames = rubric_fit.check(choice.rubrics, groups, files, log)
    log.raise_if_any()
    if renames:
        stage.rename_criteria(renames, sid, by_dimension=by_dim)
    stage.index()
    _check_rows(stage, study, files)
    return choice


def _groups(stage: Stage, study_id: int | None, by_dimension: bool, file: str,
            exclude: list[str] | None = None) -> list[Group]:
    if exclude:  # the groups of the other criteria (continuous ones are checked apart)
        groups = stage.groups(study_id, by_dimension=by_dimension, limit=MAX_GROUPS + 1,
                              exclude=exclude)
    elif study_id is None or not by_dimension:
        groups = stage.tallied(by_dimension=by_dimension)  # the rows' own dimensions
    else:  # the study's prompts may have dimensions of their own
        groups = stage.groups(study_id, by_dimension=True, limit=MAX_GROUPS + 1)
    if (stage.overflow and not exclude) or len(groups) > MAX_GROUPS:
        raise InputError([Problem(file, f"more than {MAX_GROUPS} different (criterion, value)"
                                        " pairs: these are not ratings on a scale of levels;"
                                        " for a continuous scale (a slider) declare it with"
                                        " --criteria NAME=LOW..HIGH:STEP (or :any)",
                                  field="value")])
    return groups


def _choose(study: study_store.Study | None, fmt: str, files: list[str],
            given: Choice | None, groups_by: Callable[[bool], list[Group]]) -> Choice:
    """The study's rubric when it has one (a different ``--rubric`` is refused), else the
    given one, else the inferred one (per task for ImagenHub files)."""
    if study is not None and (study.rubric or study.settings.get("criteria")):
        kept = rubric_choice.study_rubrics(study)
        if given is not None and not given.same_as(study):
            raise ConcordError(f"study {study.name!r} already rates on "
                               f"{kept.default.id if kept.default else 'its rubric'}; a study "
                               "keeps its scale (import into a new study to use another)")
        return Choice(kept, study.rubric, {}, f"rubric {_name(kept)} (the study's)")
    if given is not None:
        return given
    groups = groups_by(fmt == "imagenhub")
    choice = rubric_fit.infer(groups, files)
    if fmt == "imagenhub":
        choice = rubric_fit.per_task(choice, (g.dimension for g in groups))
    return choice


def _name(rubrics: rubric_choice.StudyRubrics) -> str:
    return rubrics.default.id if rubrics.default else "(per dimension)"


def _check_rows(stage: Stage, study: study_store.Study | None, files: list[str]) -> None:
    """Duplicates, conflicting dimensions, and targets a manifest study does not have."""
    log = ProblemLog()
    dup = stage.duplicates(50)
    for f, line, prompt, model, rater, crit, first_file, first_line in dup.rows:
        again = f"line {first_line}" + ("" if first_file == f else f" of {files[first_file]}")
        log.add(Problem(files[f], f"second rating of {prompt!r}/{model!r} by {rater!r} for "
                                  f"{crit} (first on {again})", row=line, field="criterion"))
    log.count += dup.total - len(dup.rows)
    sid = study.id if study else None
    if stage.has_dimensions():
        found = stage.dimension_conflicts(sid, 50)
        for f, line, prompt, dim in found.rows:
            log.add(Problem(files[f], f"prompt {prompt!r} is given dimension {dim!r}, but it"
                                      " has another one (earlier in the file or in the study)",
                            row=line, field="dimension"))
        log.count += found.total - len(found.rows)
    log.raise_if_any()
    stage.resolve(sid)
    if study is not None and study.root is not None:
        missing = stage.missing_targets(1)
        if missing.total:
            f, line, prompt, model, sample = missing.rows[0]
            raise InputError([Problem(files[f], f"{missing.total} rating target(s) are not"
                                                f" images of study {study.name!r}, e.g. prompt"
                                                f" {prompt!r}, model {model!r}, sample {sample}",
                                      row=line, field="prompt_id")])


def _write(db: Database, stage: Stage, study: study_store.Study | None, name: str, fmt: str,
           path: Path, choice: Choice, actor: str, labels: LabelPart | None) -> RatingsImport:
    summary = RatingsImport(study=name, created_study=study is None, rows=stage.count(),
                            rubric=choice.note)
    settings = {**(study.settings if study else pairs_rankings.new_settings(stage, fmt, labels)),
                **{k: v for k, v in choice.settings.items() if v}}
    rubric_id = study.rubric if study is not None and study.rubric else choice.rubric_id
    new = None if study else batches.NewStudy(name, rubric_id, settings,
                                              pairs_rankings.protocol(stage, labels))
    batch = batches.begin(db, study_id=study.id if study else None, new=new, source=str(path))
    try:
        with rating_writes.larger_cache(db):
            made = _write_batch(db, stage, study, batch, fmt, summary, labels)
        if study is not None and not (made or summary.added or summary.changed
                                      or pairs_rankings.wrote(summary.labels)) \
                and rubric_id == study.rubric and settings == study.settings:
            batches.drop_empty(db, batch)  # a repeated import leaves no trace
            return summary
        with transaction(db):
            batches.publish(db, batch, rubric=rubric_id, settings=settings)
            audit(db, actor, "import_ratings", name, file=str(path), batch=batch.id,
                  added=summary.added, changed=summary.changed, rubric=choice.note)
    except BaseException:
        batches.discard(db, batch.id)
        raise
    return summary


def _write_batch(db: Database, stage: Stage, study: study_store.Study | None,
                 batch: batches.Batch, fmt: str, summary: RatingsImport,
                 labels: LabelPart | None) -> int:
    """Raters, targets, ratings and labels into the pending batch; returns raters +
    images made."""
    def pacer() -> rating_writes.Pacer:  # each kind of write learns its own pace
        return rating_writes.Pacer(db, batch)

    made = rating_writes.create_raters(pacer())
    if study is None or study.root is None:
        made += rating_writes.create_targets(
            pacer(), benchmark="imagenhub" if fmt == "imagenhub" else None)
    stage.refresh_ids(batch.study_id)
    written = rating_writes.write_ratings(pacer(), batch.study_id, compare=study is not None)
    summary.added, summary.changed = written.added, written.changed
    summary.unchanged = written.unchanged
    if labels is not None:
        labels.write(pacer, batch.study_id, compare=study is not None)
        labels.write_comments(pacer, batch.study_id)
        summary.labels = labels.counts
    return made

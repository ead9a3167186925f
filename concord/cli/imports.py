"""``import``, ``import-ratings``, ``import-pairs``, ``import-rankings`` and ``import-scores``.

Each command imports its service when it runs (they load yaml, PIL, pandas).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from concord.cli.common import db_for, progress_factory
from concord.config import Settings

IMPORT_NICENESS = 10


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    """Fill in the parser of one import command (its help is in ``concord.cli.COMMANDS``)."""
    {"import": _import_parser, "import-ratings": _ratings_parser,
     "import-pairs": _pairs_parser, "import-rankings": _rankings_parser,
     "import-scores": _scores_parser}[name](p)


def _import_parser(p: argparse.ArgumentParser) -> None:
    p.description = ("Validate everything the manifest names (files, rows, fields, images) "
                     "and write nothing unless all of it is valid. Re-importing changes "
                     "nothing; new images are added. See docs/manifest.md.")
    p.add_argument("manifest", type=Path, metavar="MANIFEST", help="study.yaml or study.json")
    p.set_defaults(func=_import)


def _scores_parser(p: argparse.ArgumentParser) -> None:
    p.description = (
        "CSV columns: prompt_id, model, metric, value [, sample, question_id, "
        "judge]. tiif: TIIF-Bench judge outputs (one JSON object per line), "
        "stored per question as metric 'tiif-judge' (1 = correct). jsonl: a "
        "score file written by `score --output` (several: merge-scores).")
    p.add_argument("--study", required=True, help="target study (created if missing)")
    p.add_argument("--format", choices=["csv", "tiif", "jsonl"], required=True)
    p.add_argument("--judge", help="judge name for tiif (default: from the file name)")
    p.add_argument("path", type=Path, metavar="PATH",
                   help="CSV file; for tiif a JSONL file or a <model>/<dim>/<variant>/ tree; "
                        "for jsonl a score file")
    p.set_defaults(func=_import_scores)


def _ratings_parser(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Import ratings into a study; a missing study is created as a "
        "ratings-only study (images without files). CSV columns: prompt_id, model, "
        "rater, criterion, value [, sample, seconds, dimension]. ImagenHub: a "
        "folder of <Task>/<Task>_raterN.tsv or one TSV. label-studio: a Label "
        "Studio JSON export (docs/exports.md). Every row is checked "
        "against the study's rubric; a new study takes --rubric, --criteria, or "
        "else the one rubric that fits every row (see docs/cli.md).")
    p.add_argument("--study", required=True, help="target study (created if missing)")
    p.add_argument("--format", choices=["imagenhub", "csv", "label-studio"], required=True)
    p.add_argument("--rubric", action="append", default=[], metavar="[DIMENSION=]ID",
                   help="rubric of a new study (or of a study that has none): a file id "
                        "from rubrics/, e.g. likert-5; DIMENSION=ID gives one dimension "
                        "(ImagenHub task) its own rubric; repeatable")
    p.add_argument("--criteria", action="append", default=[], metavar="KEY=SCALE",
                   help="declare a one-off scale instead of a rubric file: likert=1..5, "
                        "q=0,0.5,1; repeat it (or separate by spaces) for several criteria")
    p.add_argument("path", type=Path, metavar="PATH",
                   help="CSV file, TSV file, TSV folder or Label Studio JSON file")
    p.set_defaults(func=_import_ratings)


def _pairs_parser(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Import pairwise (A/B) votes collected elsewhere; a missing study is created as a "
        "votes-only study. Columns (CSV/TSV) or fields (JSON Lines, .jsonl): model_a, "
        "model_b, outcome (a, b, tie, both_bad; arena logs' winner column is read too) "
        "[, prompt_id, prompt, rater, criterion, sample, seconds, time, dimension, "
        "shown_left, vote_id], or Concord's own export (left_model, right_model, outcome). "
        "Without prompt_id every vote is an item of its own. See docs/cli.md.")
    _label_arguments(p, _import_pairs)


def _rankings_parser(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Import rankings collected elsewhere; a missing study is created as a "
        "rankings-only study. Either a rank per model (prompt_id, rater, model, rank "
        "[, position, sample]; Concord's export) or an ordered list per row (prompt_id, "
        "rater, ranking: 'a > b = c > d', or a JSON list with lists for ties), each "
        "[, criterion, seconds, time, dimension, prompt]. See docs/cli.md.")
    _label_arguments(p, _import_rankings)


def _label_arguments(p: argparse.ArgumentParser, func: object) -> None:
    p.add_argument("--study", required=True, help="target study (created if missing)")
    p.add_argument("path", type=Path, metavar="PATH",
                   help="CSV (.csv), TSV (.tsv) or JSON Lines (.jsonl) file")
    p.set_defaults(func=func)


def _import(args: argparse.Namespace, settings: Settings) -> int:
    from concord.services import studies

    studies.check_manifest(args.manifest)  # a bad path answers before the database opens
    db = db_for(settings)
    s = studies.import_manifest(db, args.manifest, progress=progress_factory)
    for model, looks in s.appearance.items():
        print(f"  {model}: {looks}", file=sys.stderr)
    for warning in s.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if not s.changed:
        print(f"study {s.study!r}: nothing changed ({s.images_unchanged} images already there)")
        return 0
    verb = "created" if s.created else "updated"
    print(f"study {s.study!r} {verb}: {s.models_added} models, {s.prompts_added} prompts, "
          f"{s.questions_added} questions, {s.images_added} images added"
          f" ({s.images_unchanged} unchanged), {s.gold_added} gold"
          + (f", {s.pairs_added} pairs" if s.pairs_added else ""))
    return 0


def _import_ratings(args: argparse.Namespace, settings: Settings) -> int:
    # A batch job: raters' requests get the CPU first (a long import then takes longer).
    if hasattr(os, "nice"):
        os.nice(IMPORT_NICENESS)
    _check_input(args.path, folder_ok=args.format == "imagenhub")
    from concord.services.imports.ratings import import_ratings

    criteria = [spec for arg in args.criteria for spec in arg.split()]
    s = import_ratings(db_for(settings), args.study, args.format, args.path,
                       rubric=args.rubric, criteria=criteria)
    made = f" (new {_kind_of(s)}-only study)" if s.created_study else ""
    left_out = "".join(f"; left out: {n} {kind} result(s) (free text, not a score)"
                       for kind, n in sorted(s.skipped.items()))
    parts = [_labels_line(s)]
    if s.rows or not parts[0]:
        parts.insert(0, f"{s.rows} rows read, {s.added} ratings added, {s.changed} changed "
                        f"(new revision), {s.unchanged} unchanged; {s.rubric}")
    print(f"study {s.study!r}{made}: {'; '.join(p for p in parts if p)}{left_out}")
    return 0


def _import_pairs(args: argparse.Namespace, settings: Settings) -> int:
    return _import_labels(args, settings, "pairs")


def _import_rankings(args: argparse.Namespace, settings: Settings) -> int:
    return _import_labels(args, settings, "rankings")


def _import_labels(args: argparse.Namespace, settings: Settings, fmt: str) -> int:
    if hasattr(os, "nice"):
        os.nice(IMPORT_NICENESS)
    _check_input(args.path, folder_ok=False)
    from concord.services.imports.ratings import import_ratings

    s = import_ratings(db_for(settings), args.study, fmt, args.path)
    kind = "votes" if fmt == "pairs" else "rankings"
    made = f" (new {kind}-only study)" if s.created_study else ""
    print(f"study {s.study!r}{made}: {_labels_line(s)}{_left_out(s.skipped)}")
    return 0


def _labels_line(s: object) -> str:
    """What an import did with pair votes and rankings, e.g. ``120 votes read: 120 added,
    0 changed, 0 unchanged``."""
    parts = []
    labels = s.labels  # type: ignore[attr-defined]
    for kind, read in (("pair", labels.votes), ("ranking", labels.rankings)):
        w = labels.written.get(kind)
        if read and w is not None:
            noun = "votes" if kind == "pair" else "rankings"
            parts.append(f"{read} {noun} read: {w.added} added, {w.changed} changed (new "
                         f"revision), {w.unchanged} unchanged")
    if labels.comments_read:
        parts.append(f"{labels.comments_read} comment(s) read: {labels.comments} kept with "
                     "their labels (a comment on a label that has one already, or on "
                     "nothing, is not)")
    return "; ".join(parts)


def _kind_of(s: object) -> str:
    """What a new study was made from: ratings, or only votes or rankings."""
    labels = s.labels  # type: ignore[attr-defined]
    if s.rows or not (labels.votes or labels.rankings):  # type: ignore[attr-defined]
        return "ratings"
    return "votes" if labels.votes else "rankings"


def _left_out(skipped: dict[str, int]) -> str:
    return "".join(f"; left out: {n} {kind}(s)" for kind, n in sorted(skipped.items()))


def _import_scores(args: argparse.Namespace, settings: Settings) -> int:
    _check_input(args.path, folder_ok=args.format == "tiif")
    from concord.services.metrics import scores as metric_scores

    s = metric_scores.import_scores(db_for(settings), args.study, args.format, args.path,
                                    judge=args.judge)
    made = " (new scores-only study)" if s.created_study else ""
    print(f"study {s.study!r}{made}: {s.rows} scores read, {s.stored} stored (new or "
          "changed)")
    return 0


def _check_input(path: Path, *, folder_ok: bool) -> None:
    """A missing or unreadable input fails here, before the database is opened (a missing
    file left an empty database behind) and before the import's modules load."""
    from concord.errors import InputError
    from concord.importers.tables import regular_file_problem

    if folder_ok and path.is_dir():
        return  # a folder of files (ImagenHub TSVs, the TIIF tree): its readers check each
    problem = regular_file_problem(path)
    if problem is not None:
        raise InputError([problem])

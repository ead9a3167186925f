"""``import``, ``import-ratings`` and ``import-scores``."""

from __future__ import annotations

import argparse
from pathlib import Path

from concord.cli.common import db_for, progress_factory
from concord.config import Settings
from concord.services import labels, metric_scores, studies


def register(sub: argparse._SubParsersAction) -> None:
    """Add the import commands."""
    p = sub.add_parser(
        "import", help="import a study from a manifest (YAML or JSON)",
        description="Validate everything the manifest names (files, rows, fields, images) and "
                    "write nothing unless all of it is valid. Re-importing changes nothing; "
                    "new images are added. See docs/manifest.md.")
    p.add_argument("manifest", type=Path, metavar="MANIFEST", help="study.yaml or study.json")
    p.set_defaults(func=_import)

    p = sub.add_parser(
        "import-ratings", help="import human ratings (ImagenHub TSVs or a tidy CSV)",
        description="Import ratings into a study; a missing study is created as a "
                    "ratings-only study (images without files). CSV columns: prompt_id, model, "
                    "rater, criterion, value [, sample, seconds]. ImagenHub: a folder of "
                    "<Task>/<Task>_raterN.tsv or one TSV.")
    p.add_argument("--study", required=True, help="target study (created if missing)")
    p.add_argument("--format", choices=["imagenhub", "csv"], required=True)
    p.add_argument("path", type=Path, metavar="PATH", help="CSV file, TSV file or TSV folder")
    p.set_defaults(func=_import_ratings)

    p = sub.add_parser(
        "import-scores", help="import metric scores computed elsewhere",
        description="CSV columns: prompt_id, model, metric, value [, sample, question_id, "
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


def _import(args: argparse.Namespace, settings: Settings) -> int:
    db = db_for(settings)
    s = studies.import_manifest(db, args.manifest, progress=progress_factory)
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
    s = labels.import_ratings(db_for(settings), args.study, args.format, args.path)
    made = " (new ratings-only study)" if s.created_study else ""
    print(f"study {s.study!r}{made}: {s.rows} rows read, {s.added} ratings added, "
          f"{s.changed} changed (new revision), {s.unchanged} unchanged")
    return 0


def _import_scores(args: argparse.Namespace, settings: Settings) -> int:
    s = metric_scores.import_scores(db_for(settings), args.study, args.format, args.path,
                                    judge=args.judge)
    made = " (new scores-only study)" if s.created_study else ""
    print(f"study {s.study!r}{made}: {s.rows} scores read, {s.stored} stored (new or "
          "changed)")
    return 0

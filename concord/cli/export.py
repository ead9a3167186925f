"""``export``: human labels as CSV, JSONL, Parquet or ImagenHub TSVs; the revision history;
adjudicated values; a Hugging Face dataset; Label Studio JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from concord import atomic
from concord.cli.common import db_for
from concord.config import Settings
from concord.errors import ConcordError

# Spelled out rather than taken from concord.export (pandas, pyarrow), so that a mistyped
# command fails fast; tests/test_cli.py checks they match.
LABEL_FORMATS = ("csv", "jsonl", "parquet", "imagenhub", "checklist")
# Tables whose file type follows -o's suffix or --as.
TABLES = ("history", "adjudications", "questionnaire")
TABLE_TYPES = ("csv", "jsonl", "parquet")
FOLDERS = ("imagenhub", "hf")
FORMATS = (*LABEL_FORMATS, *TABLES, "hf", "label-studio")


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    """Fill in the ``export`` parser (its help is in ``concord.cli.COMMANDS``)."""
    p.description = (
        "csv/jsonl/parquet: one row per current rating, per ranked image and per "
        "pair judgment (column 'kind'), one file (stdout when -o is omitted, "
        "except parquet). checklist: one CSV row per rating and checklist "
        "condition (ticked, derived and final value, override reason). "
        "imagenhub: <Task>/<Task>_<rater>.tsv files in a folder. "
        "history: every revision (edits and undos too). adjudications: the "
        "adjudicated values. questionnaire: each participant's current answers to the "
        "study's questions (never part of the labels). history, adjudications and "
        "questionnaire are CSV, JSONL or Parquet by -o's suffix (or --as). hf: a "
        "Hugging Face datasets folder (Parquet, save_to_disk, dataset card; needs 'pip "
        "install datasets'). label-studio: "
        "Label Studio tasks with annotations (JSON). See docs/exports.md."
    )
    p.add_argument("--study", required=True, help="the study to export")
    p.add_argument("--format", choices=FORMATS, default="csv")
    p.add_argument("-o", "--output",
                   help="output file (folder for imagenhub and hf), replaced atomically")
    p.add_argument("--as", dest="table_type", choices=TABLE_TYPES,
                   help="file type of history/adjudications/questionnaire (default: from "
                        "-o's suffix)")
    p.add_argument("--with-images", action="store_true",
                   help="hf: add the images (metadata-free) as an 'images' configuration")
    p.add_argument("--image-root", default="",
                   help="label-studio: prefix of data.image (e.g. /data/local-files/?d=)")
    p.add_argument("--label-config", metavar="FILE.xml",
                   help="label-studio: also write the matching labeling config (XML)")
    p.add_argument("--include-excluded", action="store_true",
                   help="also export raters excluded from the study ('raters exclude')")
    p.set_defaults(func=_export)


def _export(args: argparse.Namespace, settings: Settings) -> int:
    from concord.services import studies

    db = db_for(settings)
    studies.get(db, args.study)  # a missing study fails before the heavy imports
    from concord import export
    from concord.services.exports import labels
    if args.format in (*FOLDERS, "label-studio") and not args.output:
        what = "FOLDER" if args.format in FOLDERS else "FILE.json"
        raise ConcordError(f"--format {args.format} needs -o {what}")
    if args.format == "imagenhub":
        files = export.write_imagenhub(
            labels.ratings(db, args.study, include_excluded=args.include_excluded),
            Path(args.output))
        print(f"wrote {len(files)} TSV file(s) to {args.output}", file=sys.stderr)
        return 0
    if args.format == "hf":
        from concord.services.exports import hf_dataset

        made = hf_dataset.export_hf(db, args.study, Path(args.output),
                                    with_images=args.with_images,
                                    include_excluded=args.include_excluded)
        print(f"wrote {', '.join(made)} to {args.output}", file=sys.stderr)
        return 0
    if args.format == "label-studio":
        from concord.services.exports import label_studio

        n = label_studio.export_file(db, args.study, Path(args.output),
                                     image_root=args.image_root,
                                     include_excluded=args.include_excluded)
        print(f"wrote {n} task(s) to {args.output}", file=sys.stderr)
        if args.label_config:
            atomic.write_bytes(Path(args.label_config),
                               label_studio.study_config(db, args.study).encode("utf-8"))
            print(f"wrote {args.label_config}", file=sys.stderr)
        return 0
    return _write(args, _table_bytes(db, args))


def _table_bytes(db, args: argparse.Namespace) -> bytes:
    from concord.services import adjudication, questionnaire
    from concord.services.exports import labels
    from concord.services.exports import tables as export_tables

    if args.format in TABLES:
        kind = export_tables.table_type(args.output, args.table_type)
        frame = (export_tables.history_frame(db, args.study, include_excluded=args.include_excluded)
                 if args.format == "history"
                 else questionnaire.answers_frame(db, args.study)
                 if args.format == "questionnaire"
                 else adjudication.adjudications_frame(db, args.study))
        args.parquet = kind == "parquet"
        return export_tables.table_bytes(frame, kind)
    args.parquet = args.format == "parquet"
    return labels.export_bytes(db, args.study, args.format,
                               include_excluded=args.include_excluded)


def _write(args: argparse.Namespace, data: bytes) -> int:
    if args.output:
        atomic.write_bytes(Path(args.output), data)  # a killed export keeps the previous file
        print(f"wrote {args.output}", file=sys.stderr)
    elif args.parquet:
        raise ConcordError("Parquet needs -o FILE")
    else:
        sys.stdout.buffer.write(data)
    return 0

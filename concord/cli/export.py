"""``export``: human labels as CSV, JSONL, Parquet or ImagenHub TSVs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from concord import atomic, export
from concord.cli.common import db_for
from concord.config import Settings
from concord.errors import ConcordError
from concord.services import labels


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    """Fill in the ``export`` parser (its help is in ``concord.cli.COMMANDS``)."""
    p.description = (
        "One row per current rating, per ranked image and per pair judgment (column 'kind'). "
        "csv/jsonl/parquet write one file (stdout when -o is omitted, except parquet); "
        "imagenhub writes <Task>/<Task>_<rater>.tsv files into a folder.")
    p.add_argument("--study", required=True, help="the study to export")
    p.add_argument("--format", choices=export.FORMATS, default="csv")
    p.add_argument("-o", "--output",
                   help="output file (folder for imagenhub), replaced atomically")
    p.add_argument("--include-excluded", action="store_true",
                   help="also export raters excluded from the study ('raters exclude')")
    p.set_defaults(func=_export)


def _export(args: argparse.Namespace, settings: Settings) -> int:
    db = db_for(settings)
    if args.format == "imagenhub":
        if not args.output:
            raise ConcordError("--format imagenhub needs -o FOLDER")
        files = export.write_imagenhub(
            labels.ratings(db, args.study, include_excluded=args.include_excluded),
            Path(args.output))
        print(f"wrote {len(files)} TSV file(s) to {args.output}", file=sys.stderr)
        return 0
    data = labels.export_bytes(db, args.study, args.format,
                               include_excluded=args.include_excluded)
    if args.output:
        atomic.write_bytes(Path(args.output), data)  # a killed export keeps the previous file
        print(f"wrote {args.output}", file=sys.stderr)
    elif args.format == "parquet":
        raise ConcordError("--format parquet needs -o FILE")
    else:
        sys.stdout.buffer.write(data)
    return 0

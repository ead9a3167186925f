"""``adjudicate list`` / ``adjudicate set``: the most disagreed items and their
adjudicated values (kept apart from the raw labels; see docs/exports.md)."""

from __future__ import annotations

import argparse

from concord.cli.common import db_for, print_table, whole_number_arg
from concord.config import Settings
from concord.importers.safe_load import INT64_MAX
from concord.services import adjudication


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    """Fill in the ``adjudicate`` parser (its help is in ``concord.cli.COMMANDS``)."""
    p.description = ("Items raters disagree on most (scores: range then std; rankings: "
                     "1 - Kendall's W; pairs: 1 - majority share) and adjudicated values "
                     "stored apart from the raw labels.")
    cmds = p.add_subparsers(dest="adjudicate_command", metavar="ACTION", required=True)
    ls = cmds.add_parser("list", help="the most disagreed items, every answer side by side",
                         description="The items raters disagree on most, every rater's "
                                     "answer side by side, with the adjudicated value if any.")
    _common(ls)
    ls.add_argument("--criterion", help="only this criterion")
    ls.add_argument("--limit", type=whole_number_arg(1, 1_000_000), default=20,
                    help="items listed (default 20)")
    ls.set_defaults(func=_list)
    st = cmds.add_parser("set", help="store (or --clear) an item's adjudicated value",
                         description="Store an item's adjudicated value (kept apart from the "
                                     "raw ratings), or withdraw it with --clear.")
    _common(st)
    st.add_argument("--item", type=whole_number_arg(1, INT64_MAX), required=True,
                    help="item id as 'list' shows it")
    st.add_argument("--criterion", required=True)
    group = st.add_mutually_exclusive_group(required=True)
    group.add_argument("--value", help="score; models best first as 'list' prints them, "
                                       "'a > b > c' or 'a,b,c' (rank); a, b, tie, both_bad "
                                       "or a model name (pair)")
    group.add_argument("--clear", action="store_true", help="withdraw the adjudicated value")
    st.add_argument("--note", default="", help="why (kept with the value)")
    st.set_defaults(func=_set)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--study", required=True)
    p.add_argument("--view", choices=list(adjudication.UNITS), default="score",
                   help="score (per image), rank (per ranking set) or pair")


def _list(args: argparse.Namespace, settings: Settings) -> int:
    items = adjudication.queue(db_for(settings), args.study, args.view,
                               criterion=args.criterion, limit=args.limit)
    rows = [{"item": i["item_id"], "prompt_id": i["prompt_id"],
             "model": i.get("model") or "", "criterion": i["criterion"],
             "raters": i["n_raters"], "disagreement": f"{i['disagreement']:.3f}",
             "answers": "; ".join(f"{a['rater']}: {a['answer']}" for a in i["answers"]),
             "adjudicated": "" if i["adjudicated"] is None else str(i["adjudicated"])}
            for i in items]
    print_table(rows)
    return 0


def _set(args: argparse.Namespace, settings: Settings) -> int:
    db = db_for(settings)
    if args.clear:
        adjudication.clear(db, args.study, args.view, args.item, args.criterion, actor="cli")
        print(f"cleared the adjudicated {args.criterion} of item {args.item}")
        return 0
    stored = adjudication.set_value(db, args.study, args.view, args.item, args.criterion,
                                    args.value, note=args.note, actor="cli")
    print(f"adjudicated {args.criterion} of item {args.item}: {stored}")
    return 0

"""``raters add``, ``raters list`` and ``raters revoke``."""

from __future__ import annotations

import argparse

from concord.cli.common import db_for, print_table
from concord.config import Settings
from concord.services import studies
from concord.store import raters as rater_store
from concord.store import studies as study_store


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``raters`` command group."""
    p = sub.add_parser("raters", help="invite, list and revoke raters")
    rsub = p.add_subparsers(dest="raters_command", metavar="ACTION", required=True)

    a = rsub.add_parser("add", help="invite raters to a study; prints one invite URL each",
                        description="Create raters (or give existing ones a new token) and "
                                    "assign them to a study. Each invite URL is printed once; "
                                    "only a hash of its token is stored.")
    a.add_argument("--study", required=True)
    a.add_argument("--role", choices=["rater", "researcher"], default="rater")
    a.add_argument("names", nargs="+", metavar="NAME")
    a.set_defaults(func=_add)

    ls = rsub.add_parser("list", help="list raters with their studies and counts")
    ls.add_argument("--study", help="only raters of this study")
    ls.set_defaults(func=_list)

    rv = rsub.add_parser("revoke", help="revoke a rater's invite link (their ratings stay)")
    rv.add_argument("name")
    rv.set_defaults(func=_revoke)


def _add(args: argparse.Namespace, settings: Settings) -> int:
    db = db_for(settings)
    for inv in studies.invite(db, args.study, args.names, settings.base_url, role=args.role):
        print(f"{inv.name}\t{inv.url}")
    return 0


def _list(args: argparse.Namespace, settings: Settings) -> int:
    db = db_for(settings)
    study_id = study_store.get_study(db, args.study).id if args.study else None
    rows = rater_store.list_raters(db, study_id)
    for r in rows:
        r["status"] = "revoked" if r.pop("revoked_at") else "active"
    print_table(rows, ["name", "role", "status", "studies", "ratings", "rankings", "created_at"])
    return 0


def _revoke(args: argparse.Namespace, settings: Settings) -> int:
    rater_store.revoke(db_for(settings), args.name)
    print(f"revoked {args.name!r}")
    return 0

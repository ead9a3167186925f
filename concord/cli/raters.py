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
    p = sub.add_parser("raters", help="invite, list and revoke raters",
                       description="Manage raters: 'add' invites them to a study, 'list' shows "
                                   "them with their counts, 'revoke' disables an invite link.")
    rsub = p.add_subparsers(dest="raters_command", metavar="ACTION", required=True)

    a = rsub.add_parser("add", help="invite raters to a study; prints one invite URL each",
                        description="Create raters (or give existing ones a new token) and "
                                    "assign them to a study. Each invite URL is printed once; "
                                    "only a hash of its token is stored.")
    a.add_argument("--study", required=True, help="the study to assign them to")
    a.add_argument("--role", choices=["rater", "researcher"], default="rater",
                   help="researchers also see the researcher pages (default: rater)")
    a.add_argument("names", nargs="+", metavar="NAME", help="rater names (unique)")
    a.set_defaults(func=_add)

    ls = rsub.add_parser("list", help="list raters with their studies and counts",
                         description="One line per rater: role, active or revoked, studies, "
                                     "current ratings and rankings, when they were created.")
    ls.add_argument("--study", help="only raters of this study")
    ls.set_defaults(func=_list)

    rv = rsub.add_parser("revoke", help="revoke a rater's invite link (their ratings stay)",
                         description="Revoke a rater's invite link: it stops working at once. "
                                     "Their ratings stay; 'raters add' gives them a new link.")
    rv.add_argument("name", help="the rater's name")
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

"""``raters add``, ``list``, ``revoke``, and ``exclude``/``include`` (a study's statistics)."""

from __future__ import annotations

import argparse

from concord.cli.common import db_for, print_table
from concord.config import Settings
from concord.services import exclusions, studies


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    """Fill in the ``raters`` command group (its help is in ``concord.cli.COMMANDS``)."""
    p.description = ("Manage raters: 'add' invites them to a study, 'list' shows them with "
                     "their counts, 'revoke' disables an invite link.")
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
                                     "rated images, rating values (one per image and "
                                     "criterion: SC and PR count apart) and rankings (in "
                                     "--study, or in all studies), when they were created.")
    ls.add_argument("--study", help="only raters of this study")
    ls.set_defaults(func=_list)

    rv = rsub.add_parser("revoke", help="revoke a rater's invite link (their ratings stay)",
                         description="Revoke a rater's invite link: it stops working at once. "
                                     "Their ratings stay; 'raters add' gives them a new link.")
    rv.add_argument("name", help="the rater's name")
    rv.set_defaults(func=_revoke)
    _register_exclusions(rsub)


def _register_exclusions(rsub: argparse._SubParsersAction) -> None:
    ex = rsub.add_parser(
        "exclude", help="leave a rater out of a study's statistics and exports",
        description="Leave a rater out of one study's statistics (stats, dashboard) and "
                    "label exports. Nothing is deleted; 'raters include' takes them back. "
                    "Both are recorded in the audit log.")
    ex.add_argument("--study", required=True, help="the study")
    ex.add_argument("--reason", required=True, help="why (kept with the exclusion)")
    ex.add_argument("name", help="the rater's name")
    ex.set_defaults(func=_exclude)
    inc = rsub.add_parser("include", help="take an excluded rater back into a study",
                          description="Undo 'raters exclude': the rater's ratings and "
                                      "rankings count again in the study's statistics "
                                      "and exports.")
    inc.add_argument("--study", required=True, help="the study")
    inc.add_argument("name", help="the rater's name")
    inc.set_defaults(func=_include)
    ls = rsub.add_parser("excluded", help="list the raters excluded from a study",
                         description="One line per excluded rater: reason, who excluded "
                                     "them and when.")
    ls.add_argument("--study", required=True, help="the study")
    ls.set_defaults(func=_excluded)


def _add(args: argparse.Namespace, settings: Settings) -> int:
    db = db_for(settings)
    for inv in studies.invite(db, args.study, args.names, settings.base_url, role=args.role):
        print(f"{inv.name}\t{inv.url}")
    return 0


def _list(args: argparse.Namespace, settings: Settings) -> int:
    rows = studies.raters(db_for(settings), args.study)
    for r in rows:
        r["status"] = "revoked" if r.pop("link") == "revoked" else "active"
    print_table(rows, ["name", "role", "status", "studies", "rated_images", "rating_values",
                       "rankings", "created_at"])
    return 0


def _revoke(args: argparse.Namespace, settings: Settings) -> int:
    studies.revoke(db_for(settings), args.name)
    print(f"revoked {args.name!r}")
    return 0


def _exclude(args: argparse.Namespace, settings: Settings) -> int:
    exclusions.exclude_rater(db_for(settings), args.study, args.name, args.reason)
    print(f"excluded {args.name!r} from study {args.study!r} (its statistics and exports)")
    return 0


def _include(args: argparse.Namespace, settings: Settings) -> int:
    exclusions.include_rater(db_for(settings), args.study, args.name)
    print(f"included {args.name!r} in study {args.study!r} again")
    return 0


def _excluded(args: argparse.Namespace, settings: Settings) -> int:
    rows = exclusions.excluded_raters(db_for(settings), args.study)
    if not rows:
        print(f"no rater is excluded from study {args.study!r}")
        return 0
    print_table(rows, ["rater", "reason", "actor", "excluded_at"])
    return 0

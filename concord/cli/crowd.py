"""``crowd link``, ``links``, ``revoke``, ``relink``, ``status`` and ``pay``: crowd
studies."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from concord.atomic import write_bytes
from concord.cli.common import db_for, print_table
from concord.config import Settings
from concord.services.crowd import ids as crowd_ids
from concord.services.crowd import links as crowd


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    """Fill in the ``crowd`` command group (its help is in ``concord.cli.COMMANDS``)."""
    p.description = ("Crowd studies: a study link for self sign-up (Prolific, MTurk or none), "
                     "who joined and where they are, and the time and pay report.")
    csub = p.add_subparsers(dest="crowd_command", metavar="ACTION", required=True)
    lk = csub.add_parser("link", help="create (or --rotate) a study link; prints its URL",
                         description="Create a study link for self sign-up. The URL is "
                                     "printed once; only a hash of its token is stored. The "
                                     "platform appends its participant parameters.")
    lk.add_argument("--study", required=True, help="the study")
    lk.add_argument("--platform", choices=sorted(crowd_ids.PLATFORMS),
                    default=crowd_ids.DEFAULT_PLATFORM,
                    help="which participant parameters the link expects (default: prolific)")
    done = lk.add_mutually_exclusive_group()
    done.add_argument("--completion-code", help="code shown to raters who finish")
    done.add_argument("--completion-url", help="address raters who finish are sent to")
    out = lk.add_mutually_exclusive_group()
    out.add_argument("--screenout-code",
                     help="code shown to raters screened out (failed practice, too many skips "
                          "or failed checks)")
    out.add_argument("--screenout-url", help="address screened-out raters go to")
    lk.add_argument("--rotate", action="store_true",
                    help="revoke the study's active links first (a leaked link)")
    lk.add_argument("--any-id", action="store_true",
                    help="accept any participant id of 1 to 64 letters, digits, '-' or '_' "
                         "instead of the platform's format (Prolific: 24 hexadecimal "
                         "digits; MTurk: 'A' and 11 to 13 capitals or digits)")
    lk.set_defaults(func=_link)
    rl = csub.add_parser(
        "relink", help="a new personal link for a participant who lost their browser",
        description="Print a new personal link for a participant of the study (their old "
                    "one stops working). For a participant who changed device or cleared "
                    "their cookies: a study link with their id alone is refused.")
    rl.add_argument("--study", required=True, help="the study")
    rl.add_argument("--participant", required=True, help="their platform participant id")
    rl.set_defaults(func=_relink)
    for name, helptext, func in (
            ("links", "list a study's links (never their tokens)", _links),
            ("revoke", "close a study's links to new sign-ups", _revoke),
            ("status", "who joined, consented, passed or failed the practice and the "
                       "attention checks, finished; refused visits, many ids from one client",
             _status)):
        c = csub.add_parser(name, help=helptext, description=helptext[0].upper() +
                            helptext[1:] + ".")
        c.add_argument("--study", required=True, help="the study")
        c.set_defaults(func=func)
    _register_pay(csub)


def _register_pay(csub: argparse._SubParsersAction) -> None:
    pay = csub.add_parser(
        "pay", help="per-rater active time and pay as CSV",
        description="One CSV row per rater: platform ids, status (completed, screened out, "
                    "failed checks, returned, incomplete), items done and skipped, practice "
                    "result, attention checks passed and failed, active time (server-side "
                    "time on item, each item capped at the idle cap) and pay at the hourly "
                    "rate (docs/raters.md).")
    pay.add_argument("--study", required=True, help="the study")
    pay.add_argument("-o", "--output", help="CSV file to write (default: standard output)")
    pay.add_argument("--hourly-rate", type=float, help="override the study's hourly_rate")
    pay.add_argument("--idle-cap", type=float, metavar="SECONDS",
                     help="override the study's idle_cap_seconds")
    pay.set_defaults(func=_pay)


def _link(args: argparse.Namespace, settings: Settings) -> int:
    codes = {"completion_code": args.completion_code, "completion_url": args.completion_url,
             "screenout_code": args.screenout_code, "screenout_url": args.screenout_url}
    made = crowd.create_link(db_for(settings), args.study, settings.base_url,
                             platform=args.platform, codes=codes, rotate=args.rotate,
                             strict_ids=not args.any_id)
    print(made.url)
    spec = crowd_ids.PLATFORMS[args.platform]
    if spec.id_required:
        names = ", ".join((spec.id_param, *spec.params))
        print(f"({spec.label} appends {names} to it; the link is shown only now)",
              file=sys.stderr)
    return 0


def _links(args: argparse.Namespace, settings: Settings) -> int:
    rows = [{"id": lk.id, "platform": lk.platform, "status": "active" if lk.active
             else "revoked", "completion": lk.completion_code or lk.completion_url or "",
             "screenout": lk.screenout_code or lk.screenout_url or "",
             "created_at": lk.created_at} for lk in crowd.links(db_for(settings), args.study)]
    print_table(rows)
    return 0


def _relink(args: argparse.Namespace, settings: Settings) -> int:
    print(crowd.relink(db_for(settings), args.study, args.participant, settings.base_url))
    print("(their previous personal link stops working; the link is shown only now)",
          file=sys.stderr)
    return 0


def _revoke(args: argparse.Namespace, settings: Settings) -> int:
    n = crowd.revoke_links(db_for(settings), args.study)
    print(f"closed {n} link(s) of study {args.study!r} to new sign-ups; raters who joined "
          "keep working")
    return 0


def _status(args: argparse.Namespace, settings: Settings) -> int:
    from concord.services.crowd import status as crowd_status

    db = db_for(settings)
    print_table(crowd_status.status(db, args.study))
    for client, n in crowd_status.automated_clients(db, args.study):
        print(f"warning: {n} participant ids joined from one client ({client}): automated?",
              file=sys.stderr)
    return 0


def _pay(args: argparse.Namespace, settings: Settings) -> int:
    from concord.services.crowd import status as crowd_status

    frame = crowd_status.pay_report(db_for(settings), args.study,
                                    hourly_rate=args.hourly_rate, idle_cap=args.idle_cap)
    from concord.export import to_csv_bytes  # pyarrow: after the study is found
    data = to_csv_bytes(frame)
    if args.output:
        write_bytes(Path(args.output), data)
        print(f"wrote {len(frame)} rater(s) to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(data.decode("utf-8"))
    return 0

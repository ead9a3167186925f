"""``init``, ``reset-secret``, ``studies``, ``delete-study`` and ``validate-rubrics``."""

from __future__ import annotations

import argparse
import sys

from concord.cli.common import db_for, print_table
from concord.config import Settings
from concord.errors import ConcordError
from concord.rubrics import validate_rubrics
from concord.services import secret, studies


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    """Fill in the parser of one set-up command (its help is in ``concord.cli.COMMANDS``)."""
    {"init": _init_parser, "reset-secret": _reset_parser, "studies": _studies_parser,
     "delete-study": _delete_parser, "validate-rubrics": _validate_parser}[name](p)


def _init_parser(p: argparse.ArgumentParser) -> None:
    p.description = ("Create (or upgrade) the database. When it holds no study, load the demo "
                     "study from data/demo/.")
    p.add_argument("--no-demo", action="store_true", help="do not load the demo study")
    p.set_defaults(func=_init)


def _reset_parser(p: argparse.ArgumentParser) -> None:
    p.description = ("Make a new researcher sign-in secret and print it (once: only its "
                     "scrypt hash is kept, in <db>.admin-secret). Researchers signed in with "
                     "the old one are signed out, in every browser; a pause of sign-ins "
                     "after too many failed attempts is lifted. Not for a secret set by "
                     "CONCORD_ADMIN_SECRET.")
    p.set_defaults(func=_reset_secret)


def _studies_parser(p: argparse.ArgumentParser) -> None:
    p.description = ("One line per study: protocol, rubric, raters wanted per item, and how "
                     "many models, prompts, images, current ratings, rankings and metric "
                     "scores it holds.")
    p.set_defaults(func=_studies)


def _delete_parser(p: argparse.ArgumentParser) -> None:
    p.description = ("Delete a study: its prompts, images, ratings, rankings, metric scores "
                     "and assignments. Raters stay.")
    p.add_argument("--study", required=True, help="the study to delete")
    p.add_argument("--yes", action="store_true", help="confirm; required")
    p.set_defaults(func=_delete)


def _validate_parser(p: argparse.ArgumentParser) -> None:
    p.description = "Check every rubrics/*.yaml file; print each problem with its file and key."
    p.add_argument("--dir", help="rubrics folder (default: the repository's rubrics/)")
    p.set_defaults(func=_validate_rubrics)


def _init(args: argparse.Namespace, settings: Settings) -> int:
    if settings.admin_secret is not None:
        secret.current(settings)  # a weak CONCORD_ADMIN_SECRET stops `make run` here
    db = db_for(settings)
    summary = None if args.no_demo else studies.ensure_demo(db)
    print(f"database ready: {settings.shown}")
    if summary is not None:
        print(f"loaded demo study {summary.study!r}: {summary.prompts_added} prompts, "
              f"{summary.images_added} images")
        for inv in studies.invite(db, summary.study, ["demo-rater"], settings.base_url):
            print(f"demo rater invite: {inv.url}")
    _print_secret(secret.ensure(settings))
    return 0


def _print_secret(done: secret.SetUp) -> None:
    if done.shown is None:
        print(f"researcher sign-in secret: set by {done.source}" if
              done.source == "CONCORD_ADMIN_SECRET" else
              f"researcher sign-in secret: kept as a hash in {done.source} (it was shown when"
              " it was made); forgot it? python -m concord reset-secret")
        return
    kept = "once more: from now on only its hash is kept" if done.converted else \
        "once: only its hash is kept"
    print(f"researcher sign-in secret: {done.shown}  (shown {kept} in {done.source}; a new "
          "one: python -m concord reset-secret)")


def _reset_secret(args: argparse.Namespace, settings: Settings) -> int:
    shown = secret.reset(settings)
    from concord.services import auth, research_session

    db = db_for(settings)
    lifted = auth.clear_failures(db)
    ended = research_session.end_all(db)  # they would end anyway: their secret is gone
    _print_secret(secret.SetUp(str(secret.secret_file(settings)), shown))
    if lifted:
        print(f"forgot {lifted} failed sign-in attempt(s): researchers can sign in now")
    if ended:
        print(f"signed out {ended} researcher session(s)")
    return 0


def _studies(args: argparse.Namespace, settings: Settings) -> int:
    print_table(studies.overview(db_for(settings)))
    return 0


def _delete(args: argparse.Namespace, settings: Settings) -> int:
    if not args.yes:
        raise ConcordError(f"deleting study {args.study!r} removes all its ratings; "
                           "add --yes to confirm")
    counts = studies.delete(db_for(settings), args.study)
    print(f"deleted study {args.study!r}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0


def _validate_rubrics(args: argparse.Namespace, settings: Settings) -> int:
    try:
        problems = validate_rubrics(args.dir)
    except FileNotFoundError as exc:
        raise ConcordError(str(exc)) from exc
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("all rubrics are valid")
    return 0

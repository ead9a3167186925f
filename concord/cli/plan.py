"""``plan``: how many prompts and raters a study needs (simulation from a pilot study or
from typed variance components; ``concord.stats.power``)."""

from __future__ import annotations

import argparse
import json
import sys

from concord import atomic
from concord.cli.common import db_for, print_table
from concord.config import Settings
from concord.errors import ConcordError

DESCRIPTION = (
    "Plan a study: for a grid of prompts and raters per image, the power to separate two "
    "models DIFFERENCE apart (paired test; simulated, and the normal approximation), the "
    "width of a model score's interval, the width of Krippendorff's alpha's interval, and "
    "the power to separate two metrics' correlations with people (Williams' test). The "
    "variance components come from a pilot study (--study) or are typed in (--sd-*). "
    "Every simulation is seeded (--seed) and bounded.")
_TYPED = ("sd_prompt", "sd_prompt_model", "sd_rater")


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    """Fill in the ``plan`` parser."""
    from concord.services.report.planning import MAX_PROMPTS, MAX_RATERS, MAX_SIMS

    p.description = DESCRIPTION
    p.add_argument("--study", help="pilot study to estimate the variance components from")
    p.add_argument("--criterion", help="criterion of the pilot (default: O, else the first)")
    p.add_argument("--metric", action="append", default=[], metavar="NAME",
                   help="a metric of the pilot (give two; a metric with a judge is "
                        "NAME@JUDGE) for the power of metric against metric")
    p.add_argument("--difference", type=float, help="model difference to detect, on the "
                   "rating scale (default: the pilot's gap between its two best models)")
    for flag, help_ in (("--sd-prompt", "SD of prompt effects"),
                        ("--sd-prompt-model", "SD of prompt x model effects"),
                        ("--sd-rater", "SD of one rating around its image's mean"),
                        ("--sd-model", "SD of the model means (default 0; for alpha)")):
        p.add_argument(flag, type=float, help=f"{help_} (without --study)")
    p.add_argument("--models", type=int, default=None, help="models per prompt (typed; "
                   "default 2)")
    for flag in ("--r-hx", "--r-hy", "--r-xy"):
        p.add_argument(flag, type=float, help="correlations of human-x, human-y, x-y "
                       "(typed; all three)")
    p.add_argument("--prompts", type=_grid(2, MAX_PROMPTS), default=[25, 50, 100, 200, 400,
                                                                      800],
                   help="prompt counts to try, comma-separated (default 25,...,800)")
    p.add_argument("--raters", type=_grid(1, MAX_RATERS), default=[1, 3, 5],
                   help="raters per image to try (default 1,3,5)")
    p.add_argument("--power", type=_fraction, default=0.8, help="target power (0.8)")
    p.add_argument("--alpha", type=_fraction, default=0.05, help="test level (0.05)")
    p.add_argument("--width", type=float, help="target width of a model score's interval")
    p.add_argument("--alpha-width", type=float,
                   help="target width of Krippendorff's alpha's interval")
    p.add_argument("--n-sims", type=_grid(2, MAX_SIMS, single=True), default=1000,
                   metavar="N", help="simulated studies per cell (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="simulation seed")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.set_defaults(func=_plan)


def _grid(low: int, high: int, single: bool = False):
    def parse(text: str) -> list[int] | int:
        from concord.services.report.planning import MAX_GRID

        parts = text.split(",")
        if len(parts) > (1 if single else MAX_GRID):
            raise argparse.ArgumentTypeError(f"at most {MAX_GRID} values, got {len(parts)}")
        try:
            values = [int(v.strip()) for v in parts]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected whole numbers, got {text!r}") from None
        bad = [v for v in values if not low <= v <= high]
        if bad:
            raise argparse.ArgumentTypeError(f"each value must be {low}..{high}, got {bad[0]}")
        return values[0] if single else values
    return parse


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return value


class PlanError(ConcordError):
    """A plan the data or the numbers given cannot support (one line, exit 1)."""


def _plan(args: argparse.Namespace, settings: Settings) -> int:
    from concord.stats.power import needed, plan_table

    try:
        components, criterion = _components(args, settings)
        table = plan_table(components, prompts=args.prompts, raters=args.raters,
                           alpha=args.alpha, n_sims=args.n_sims, seed=args.seed)
        enough = needed(table, power=args.power, width=args.width,
                        alpha_width=args.alpha_width)
    except ValueError as exc:
        raise PlanError(f"plan: {exc}") from exc
    doc = {"components": dict(vars(components)), "criterion": criterion,
           "settings": {k: getattr(args, k) for k in ("power", "alpha", "width", "alpha_width",
                                                       "n_sims", "seed")},
           "table": _records(table), "needed": _records(enough)}
    text = json.dumps(doc, allow_nan=False) + "\n" if args.json else _text(doc)
    if args.output:
        atomic.write_bytes(args.output, text.encode("utf-8"))
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _components(args: argparse.Namespace, settings: Settings):
    from concord.stats.power import Components

    typed = [getattr(args, k) for k in _TYPED]
    correlations = [args.r_hx, args.r_hy, args.r_xy]
    if args.study:
        if any(v is not None for v in typed):
            raise ValueError("give either --study or the --sd-* components, not both")
        from concord.services.report.planning import pilot_components
        components, criterion = pilot_components(
            db_for(settings), args.study, criterion=args.criterion, metrics=args.metric,
            difference=args.difference)
        return components, criterion
    missing = [f"--{k.replace('_', '-')}" for k, v in zip(_TYPED, typed, strict=True)
               if v is None]
    if missing or args.difference is None:
        raise ValueError("without --study, give --difference and "
                         f"{', '.join(missing) or 'the components'}")
    return Components(*typed, args.sd_model or 0.0, args.models or 2, args.difference,
                      *correlations), None


def _records(frame) -> list[dict]:
    from concord.stats.report.records import records

    return records(frame)


def _text(doc: dict) -> str:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        c = doc["components"]
        print(f"Components{' of ' + doc['criterion'] if doc['criterion'] else ''}: "
              + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                          for k, v in c.items() if v is not None))
        print("\n== Plan (power: share of simulated studies; widths: central range)")
        print_table([{k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()}
                     for r in doc["table"]])
        print(f"\n== Fewest prompts reaching the targets (power {doc['settings']['power']})")
        print_table(doc["needed"])
    return buf.getvalue()

"""``stats``: the statistics of a study as readable tables or as a JSON document."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import math
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from concord import atomic
from concord.cli.common import db_for, print_table
from concord.config import Settings
from concord.services.report.request import ReportOptions

# Every flag's default is the report's (one place: ReportOptions).
_DEFAULT = ReportOptions()

if TYPE_CHECKING:
    from sqlite_utils import Database

    from concord.services.report.request import ReportRequest

DESCRIPTION = (
    "Leaderboard of human scores with prompt-bootstrap CIs (mean of rater means with the "
    "std across raters, and mean of image means), inter-rater agreement (Krippendorff's "
    "alpha, Fleiss' kappa) per study and per model, ranking statistics, human vs metric "
    "correlations (Spearman, Kendall tau-b, Pearson; bootstrap CI and permutation p at the "
    "model level, Fisher CI and analytic p at the item level) per metric x dimension x "
    "level, per-model item-level correlations combined over models (mean r, Fisher z, "
    "tanh of mean r), rater versus the rest, rater quality flags, the images humans and "
    "metrics disagree on most, and the benchmark scores of stored metric values "
    "(PairComp, GenEval 2, TIIF-Bench, GNED, paraphrase consistency), and pairwise A/B "
    "statistics (win rates, Bradley-Terry with Davidson ties and ties-count-half, also on "
    "pairs derived from rankings, Elo, left/right bias, agreement, metric pair accuracy), "
    "and the claims a paper prints: every two models compared over prompts (bootstrap CI, "
    "permutation and Wilcoxon tests, Holm and Benjamini-Hochberg), rank intervals, "
    "Bradley-Terry differences and head-to-head win rates, every two metrics compared "
    "against the same humans (paired bootstrap, swap permutation, Williams' test), "
    "intervals on alpha and kappa, ICC(2,1)/ICC(2,k), weighted kappa, Kendall's W tests. "
    "Gold items count "
    "only for rater quality; excluded raters ('raters exclude') are left out. --json "
    "prints the whole document (docs/stats-json.md); missing statistics are null.")


def add_arguments(name: str, p: argparse.ArgumentParser) -> None:
    """Fill in the ``stats`` parser (its help is in ``concord.cli.COMMANDS``)."""
    p.description = DESCRIPTION
    p.add_argument("--study", required=True, help="the study")
    p.add_argument("--json", action="store_true", help="print the JSON document")
    p.add_argument("--dimension", help="only prompts of this dimension (task, category)")
    p.add_argument("--metric", help="only this metric (human vs metric, benchmarks)")
    p.add_argument("--by-dimension", action="store_true",
                   help="add model scores and agreement per dimension")
    p.add_argument("--n-boot", type=_positive, default=_DEFAULT.n_boot, metavar="N",
                   help=f"bootstrap resamples for every CI (default {_DEFAULT.n_boot})")
    p.add_argument("--n-perm", type=_positive, default=_DEFAULT.n_perm, metavar="N",
                   help=f"permutations for model-level p-values (default {_DEFAULT.n_perm})")
    p.add_argument("--seed", type=int, default=_DEFAULT.seed, metavar="K",
                   help="resampling seed")
    p.add_argument("--model-score", choices=["image-means", "rater-means"],
                   default=_flag(_DEFAULT.model_score),
                   help="human model score of the model-level human-vs-metric correlation: "
                        "mean of image means (default) or mean of rater means (ImagenHub)")
    p.add_argument("--n-disagreements", type=_positive, default=_DEFAULT.n_disagreements,
                   metavar="N", help="images listed per metric x judge x human source "
                                     f"(default {_DEFAULT.n_disagreements})")
    g = p.add_argument_group("pair scores (default: the study's pairs: settings, else the arena's)")
    g.add_argument("--bt-prior", type=_prior, metavar="P", help="Bradley-Terry prior "
                   "precision on the log-strengths (an L2 penalty; 0: maximum likelihood)")
    g.add_argument("--elo-scale", type=_finite_positive, metavar="S", help="score points "
                   "that are odds of BASE:1 (400)")
    g.add_argument("--elo-base", type=_finite_positive, metavar="B", help="the odds of "
                   "SCALE points (10)")
    g.add_argument("--elo-initial", type=_finite, metavar="R", help="Elo's start and the "
                   "Bradley-Terry mean score (1000)")
    g.add_argument("--pair-bootstrap", choices=["prompt", "vote"], help="what the "
                   "Bradley-Terry and online-Elo intervals resample (prompt)")
    p.add_argument("-o", "--output", type=Path, help="write to this file instead of stdout")
    p.add_argument("--no-cache", action="store_true",
                   help="compute afresh, neither reading nor storing the report cache (a "
                        "report is reused only while the database, the options and the "
                        "code are unchanged)")
    p.set_defaults(func=_stats)


def _flag(model_score: str) -> str:
    """``--model-score``'s spelling of a report's ``model_score`` (``mean_image_means``)."""
    return model_score.removeprefix("mean_").replace("_", "-")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {text!r}")
    return value


# The pair-score settings (concord.services.report.settings.PAIR_SETTINGS) and their flags.
_PAIR_FLAGS = {"bt_prior": "bt_prior", "elo_scale": "elo_scale", "elo_base": "elo_base",
               "elo_initial": "elo_initial", "bootstrap": "pair_bootstrap"}


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _finite_positive(text: str) -> float:
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def _prior(text: str) -> float:
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _stats(args: argparse.Namespace, settings: Settings) -> int:
    from concord.services.report import cache as report_cache
    from concord.services.report import request as report_request

    db = db_for(settings)
    options = ReportOptions(
        model_score=f"mean_{args.model_score.replace('-', '_')}",
        pairs=report_request.pair_overrides({key: getattr(args, flag)
                                             for key, flag in _PAIR_FLAGS.items()}),
        **{k: getattr(args, k) for k in ("dimension", "metric", "by_dimension", "n_boot",
                                         "n_perm", "seed", "n_disagreements")})
    request = report_request.resolve(db, args.study, options)  # the study's one lookup
    text, _ = report_cache.report_json(db, request, lambda: _compute(db, request),
                                       use_cache=not args.no_cache)
    if args.json:
        text += "\n"
    else:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):  # print_table writes to stdout
            print_report(json.loads(text))
        text = buf.getvalue()
    if args.output:
        atomic.write_bytes(args.output, text.encode("utf-8"))  # a killed run keeps the old
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _compute(db: Database, request: ReportRequest) -> str:
    """The report's compact JSON, computed from the study's frames."""
    from concord.services.report import frames as study_frames

    # scipy.stats takes ~1.5 s to import and the ratings query ~1 s with the GIL released
    # (a million ratings): import the statistics in a thread while this one reads.
    opts = request.options
    with _importing("concord.services.report.study", "evaluators.registry"):
        data = study_frames.load_frames(db, request.study, dimension=opts.dimension,
                                        metric=opts.metric)
    from concord.services.report import study as report
    from evaluators import registry  # the directions, from the classes (no torch)

    doc = report.study_report(db, request, data=data,
                              higher_is_better=registry.higher_is_better)
    # One line: the C encoder (indenting falls back to the pure-Python one, ~10× slower on
    # a large study); `| python -m json.tool` or `| jq` indents it.
    return report.report_json(doc, indent=None)


@contextlib.contextmanager
def _importing(*modules: str) -> Iterator[None]:
    """Import ``modules`` in a thread for the duration of the block.

    A failed import is not reported here: the caller imports the modules again after the
    block, which raises the error in the main thread.
    """
    def load() -> None:
        with contextlib.suppress(Exception):
            for name in modules:
                importlib.import_module(name)

    thread = threading.Thread(target=load, name="concord-import", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _ci(row: dict, prefix: str) -> str:
    low, high = row.get(f"{prefix}_low"), row.get(f"{prefix}_high")
    return "–" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def _section(title: str, rows: Sequence[dict], build: Callable[[dict], dict]) -> None:
    if not rows:
        return
    print(f"\n== {title}")
    print_table([build(r) for r in rows])


def _human(r: dict) -> dict:
    return {"model": r["model"], "criterion": r["criterion"],
            "mean of rater means": _num(r["mean_rater_means"]),
            "95% CI": _ci(r, "mean_rater_means_ci_boot"),
            "std (raters)": _num(r["std_rater_means"]),
            "mean of image means": _num(r["mean_image_means"]),
            "95% CI ": _ci(r, "mean_image_means_ci_boot"), "raters": r["n_raters"],
            "images": r["n_images"], "rank [95% CI]": _rank(r)}


def _rank(row: dict) -> str:
    from concord.cli.stats_claims import rank

    return rank(row)


def _leaderboard(rows: list[dict]) -> list[dict]:
    """Derived criteria (O) first, then the others; best model first within each."""
    order = {"O": 0}
    return sorted(rows, key=lambda r: (r.get("dimension") or "", order.get(r["criterion"], 1),
                                       r["criterion"], -(r["mean_rater_means"] or 0.0),
                                       r["model"]))


def _agreement(r: dict) -> dict:
    head = {k: r[k] for k in ("dimension", "model", "criterion") if k in r}
    return {**head, "alpha ordinal": _num(r.get("alpha_ordinal")),
            "alpha interval": _num(r.get("alpha_interval")),
            "alpha nominal": _num(r.get("alpha_nominal")),
            "Fleiss kappa": _num(r.get("fleiss_kappa")),
            "mean Spearman": _num(r.get("mean_spearman")), "raters": r.get("n_raters"),
            "items": r.get("n_items")}


def _correlation(r: dict) -> dict:
    judge = f" ({r['judge']})" if r.get("judge") else ""
    model = r["level"] == "model"
    return {"metric": f"{r['metric']}{judge}", "human": r["human"],
            "dimension": r["dimension"], "level": r["level"],
            "Spearman": _num(r.get("spearman")),
            "95% CI": _ci(r, "spearman_ci_boot" if model else "spearman_ci_fisher"),
            "CI": "bootstrap" if model else "Fisher z",
            "p": _num(r.get("spearman_p_perm" if model else "spearman_p_analytic"), 4),
            "p test": "permutation" if model else "analytic",
            "Kendall tau-b": _num(r.get("kendall_tau_b")), "Pearson": _num(r.get("pearson")),
            "n": r.get("n")}


def _plain(keys: Sequence[str]) -> Callable[[dict], dict]:
    return lambda r: {k: _num(r.get(k), 4) for k in keys if k in r}


def print_report(doc: dict) -> None:
    """Print the report's sections as aligned tables (only sections with rows)."""
    meta = doc["meta"]
    print(_summary(meta))
    if not (doc["human"] or doc["rankings"]["models"] or doc["benchmarks"]["metric_means"]
            or meta.get("n_pair_judgments")):
        print("\nNo ratings, rankings, pair judgments or metric scores yet: invite raters, "
              "import ratings (import-ratings) or score images (python -m concord score).")
        return
    _section("Leaderboard (human scores)", _leaderboard(doc["human"]), _human)
    by_dim = doc.get("by_dimension") or {}
    _section("Leaderboard per dimension", _leaderboard(by_dim.get("human", [])),
             lambda r: {"dimension": r["dimension"], **_human(r)})
    _section("Agreement (study)", doc["agreement"]["study"], _agreement)
    _section("Agreement per model", doc["agreement"]["model"], _agreement)
    _section("Agreement per dimension and model", by_dim.get("agreement", []), _agreement)
    _print_rankings(doc["rankings"])
    _print_pairs(doc["pairs"])
    from concord.cli import stats_claims  # its tables only when a report prints

    stats_claims.print_claims(doc, _section)
    checklist = doc.get("checklist") or {}
    _section("Checklist: agreement per condition", checklist.get("conditions", []), _plain(
        ("criterion", "condition", "n_images", "n_raters", "share_ticked", "percent_agreement",
         "alpha_nominal")))
    _section("Checklist: overrides of the derived value", checklist.get("overrides", []),
             _plain(("criterion", "n_ratings", "n_overrides", "share_overridden")))
    _section(f"Human vs metric (model level: {meta['model_score']})", doc["human_vs_metric"],
             _correlation)
    _section("Per-model item-level correlation, combined over models",
             doc["human_vs_metric_per_model"]["combined"], _plain(
                 ("metric", "judge", "human", "dimension", "statistic", "mean_r", "fisher_z",
                  "tanh_mean_r", "n_models")))
    _section("Rater (and metric) versus the rest, combined over models",
             doc["rater_vs_rest"]["combined"], _plain(
                 ("human", "who", "name", "judge", "statistic", "mean_r", "fisher_z",
                  "tanh_mean_r", "pooled", "n_models")))
    _section("Human raters: each rater versus the rest, combined over raters, then models",
             doc["rater_vs_rest"]["human_raters"], _plain(
                 ("human", "statistic", "mean_r", "fisher_z", "tanh_mean_r", "n_models",
                  "n_raters")))
    _print_raters(doc["raters"])
    _section("Disagreements (largest rank gap first)", doc["disagreements"], _plain(
        ("metric", "judge", "human_source", "prompt_id", "model", "human_score",
         "metric_score", "gap")))
    _print_benchmarks(doc["benchmarks"])


def _summary(meta: dict) -> str:
    filters = ", ".join(f"{k} {meta[k]}" for k in ("dimension", "metric") if meta.get(k))
    parts = []
    if meta["n_ratings"]:
        parts.append(f"{meta['n_ratings']} rating values of {meta['n_rated_images']} rated "
                     f"images by {meta['n_raters_who_rated']} raters who rated "
                     f"({meta['n_models']} models, {meta['n_prompts']} prompts)")
    if meta["n_rankings"]:
        parts.append(f"{meta['n_rankings']} rankings of {meta['n_ranked_prompts']} prompts "
                     f"({meta['n_ranked_images']} ranked images)")
    if meta.get("n_pair_judgments"):
        parts.append(f"{meta['n_pair_judgments']} pair judgments")
    if meta["n_scores"]:
        parts.append(f"{meta['n_scores']} metric values ({', '.join(meta['metrics'])})")
    left_out = []
    if meta.get("n_gold_ratings") or meta.get("n_gold_rankings"):
        left_out.append(f"{meta['n_gold_ratings']} gold ratings and "
                        f"{meta['n_gold_rankings']} gold rankings (rater quality only)")
    if meta.get("n_gold_pair_judgments"):
        left_out.append(f"{meta['n_gold_pair_judgments']} gold pair judgments (rater quality "
                        "only)")
    if meta.get("excluded_raters"):
        left_out.append(f"excluded raters {', '.join(meta['excluded_raters'])}")
    tail = f" Left out: {'; '.join(left_out)}." if left_out else ""
    return (f"Study {meta['study']}{f' ({filters})' if filters else ''}: "
            f"{'; '.join(parts) or 'nothing to summarise'}. CIs: {meta['n_boot']} "
            f"prompt-bootstrap resamples, seed {meta['seed']}.{tail}")


def _print_raters(raters: dict) -> None:
    _section("Rater quality", raters["quality"], _plain(
        ("rater", "unit", "criterion", "n", "median_seconds", "modal_share",
         "display_order_share", "rest_spearman", "gold_accuracy")))
    _section("Rater flags", raters["flags"], _plain(("rater", "flag", "unit", "criterion",
                                                     "message")))
    _section("Excluded raters", raters.get("excluded", []), _plain(
        ("rater", "reason", "actor", "excluded_at")))


def _print_rankings(sections: dict) -> None:
    _section("Rankings: mean rank per model (1 = best)", sections["models"], _plain(
        ("criterion", "dimension", "model", "mean_rank", "std_rank", "n_prompts", "position")))
    _section("Rankings: Kendall's W", sections["kendalls_w"], _plain(
        ("criterion", "mean_w", "median_w", "n_prompts", "mean_raters")))
    _section("Rankings: position bias", sections["position_bias"], _plain(
        ("criterion", "spearman", "spearman_p_analytic", "chi2", "chi2_p_analytic", "dof",
         "n")))


def _bt(r: dict) -> dict:
    return {"source": r["source"], "criterion": r["criterion"], "ties": r["tie_model"],
            "model": r["model"], "score": _num(r["score"], 1),
            "95% CI": "–" if r["score_ci_low"] is None else
            f"[{r['score_ci_low']:.1f}, {r['score_ci_high']:.1f}]",
            "nu": _num(r["nu"]), "comparisons": r["n_comparisons"]}


def _print_pairs(sections: dict) -> None:
    _section("Pairs: Bradley-Terry scores (mean = 1000, +400 = odds 10:1)",
             sections["bradley_terry"], _bt)
    _section("Pairs: win rates (ties count half)", sections["win_rates"], _plain(
        ("criterion", "model", "win_rate", "win_rate_ci_low", "win_rate_ci_high", "n", "wins",
         "losses", "ties", "both_bad")))
    _section("Pairs: online Elo (K = 4, the votes in time order)", sections["elo_online"],
             _plain(("criterion", "model", "elo_online", "elo_online_ci_low",
                     "elo_online_ci_high", "n_comparisons")))
    _section("Pairs: Elo, mean over 100 random orders", sections["elo_perm_mean"], _plain(
        ("criterion", "model", "elo_perm_mean", "elo_perm_mean_sd", "n_comparisons")))
    _section("Pairs: left/right bias", sections["position_bias"], _plain(
        ("criterion", "n_decisive", "left_share", "ci_low", "ci_high", "p_value",
         "tie_share")))
    _section("Pairs: rater agreement", sections["agreement"], _plain(
        ("criterion", "both_bad", "alpha_nominal", "percent_agreement", "n_items",
         "n_raters")))
    _section("Pairs: metric pair accuracy", sections["metric_accuracy"], _plain(
        ("source", "metric", "judge", "accuracy", "ci_low", "ci_high", "n_pairs",
         "metric_tie_share")))
    _section("Pairs: not computed", sections["problems"], _plain(
        ("section", "source", "criterion", "message")))


# Columns the tables show per benchmark section (titles: BENCHMARK_SECTIONS of
# concord.services.report).
_BENCHMARK_COLUMNS = {
    "metric_means": ("metric", "judge", "model", "mean", "n_images", "n_missing"),
    "paircomp": ("metric", "judge", "model", "category", "arithmetic", "geometric", "n_pairs"),
    "geneval2_totals": ("metric", "judge", "model", "method", "score", "n_prompts"),
    "geneval2_by_skill": ("judge", "model", "skill", "score", "n_questions"),
    "geneval2_by_atomicity": ("judge", "model", "atom_count", "score", "n_prompts"),
    "tiif_summary": ("metric", "judge", "model", "variant", "score", "n_dimensions"),
    "gned": ("judge", "model", "variant", "gned", "recall", "n_images", "n_missing"),
    "consistency": ("metric", "judge", "model", "S_a", "S_r", "S_final", "n_abstract",
                    "n_realistic"),
    "problems": ("benchmark", "metric", "judge", "message"),
}


def _print_benchmarks(bench: dict) -> None:
    from concord.services.report import BENCHMARK_SECTIONS

    for key, title in BENCHMARK_SECTIONS:
        rows = bench[key]
        if key == "tiif_summary":  # the tables show the overall score of each judge × model
            rows, title = [r for r in rows if r["group"] == "Overall"], "TIIF-Bench overall"
        _section(title, rows, _plain(_BENCHMARK_COLUMNS[key]))

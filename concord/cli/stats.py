"""``stats``: the statistics of a study as readable tables or as a JSON document."""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from concord.cli.common import db_for, print_table
from concord.config import Settings

DESCRIPTION = (
    "Leaderboard of human scores with prompt-bootstrap CIs (mean of per-rater means, std "
    "across raters), inter-rater agreement (Krippendorff's alpha, Fleiss' kappa) per study "
    "and per model, ranking statistics, human vs metric correlations (Spearman, Kendall "
    "tau-b, Pearson with CIs and p-values) per metric x dimension x level (model, item), "
    "and the benchmark scores of stored metric values (PairComp, GenEval 2, TIIF-Bench, "
    "GNED, paraphrase consistency). --json prints the whole document "
    "(docs/stats-json.md); missing statistics are null.")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``stats`` command."""
    p = sub.add_parser("stats", help="statistics of a study (tables or --json)",
                       description=DESCRIPTION)
    p.add_argument("--study", required=True, help="the study")
    p.add_argument("--json", action="store_true", help="print the JSON document")
    p.add_argument("--dimension", help="only prompts of this dimension (task, category)")
    p.add_argument("--metric", help="only this metric (human vs metric, benchmarks)")
    p.add_argument("--by-dimension", action="store_true",
                   help="add model scores and agreement per dimension")
    p.add_argument("--n-boot", type=_positive, default=1000, metavar="N",
                   help="bootstrap resamples for every CI (default 1000)")
    p.add_argument("--n-perm", type=_positive, default=1000, metavar="N",
                   help="permutations for model-level p-values (default 1000)")
    p.add_argument("--seed", type=int, default=0, metavar="K", help="resampling seed")
    p.add_argument("-o", "--output", type=Path, help="write to this file instead of stdout")
    p.set_defaults(func=_stats)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {text!r}")
    return value


def _stats(args: argparse.Namespace, settings: Settings) -> int:
    # Imported here: scipy/statsmodels take a second to load, and every other command
    # (and --help) should not pay for them.
    from concord.services import report

    db = db_for(settings)
    doc = report.study_report(db, args.study, n_boot=args.n_boot, n_perm=args.n_perm,
                              seed=args.seed, dimension=args.dimension, metric=args.metric,
                              by_dimension=args.by_dimension)
    if args.json:
        text = report.report_json(doc) + "\n"
    else:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):  # print_table writes to stdout
            print_report(doc)
        text = buf.getvalue()
    if args.output:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _ci(row: dict, prefix: str = "") -> str:
    low, high = row.get(f"{prefix}ci_low"), row.get(f"{prefix}ci_high")
    return "–" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def _section(title: str, rows: Sequence[dict], build: Callable[[dict], dict]) -> None:
    if not rows:
        return
    print(f"\n== {title}")
    print_table([build(r) for r in rows])


def _human(r: dict) -> dict:
    return {"model": r["model"], "criterion": r["criterion"], "mean": _num(r["mean"]),
            "95% CI": _ci(r), "std (raters)": _num(r["std"]), "raters": r["n_raters"],
            "images": r["n_images"]}


def _leaderboard(rows: list[dict]) -> list[dict]:
    """Criterion O first, then the others; best model first within each."""
    order = {"O": 0}
    return sorted(rows, key=lambda r: (r.get("dimension") or "", order.get(r["criterion"], 1),
                                       r["criterion"], -(r["mean"] or 0.0), r["model"]))


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
    return {"metric": f"{r['metric']}{judge}", "human": r["human"],
            "dimension": r["dimension"], "level": r["level"],
            "Spearman": _num(r.get("spearman")), "95% CI": _ci(r, "spearman_"),
            "p": _num(r.get("spearman_p"), 4), "Kendall tau-b": _num(r.get("kendall_tau_b")),
            "Pearson": _num(r.get("pearson")), "n": r.get("n")}


def _plain(keys: Sequence[str]) -> Callable[[dict], dict]:
    return lambda r: {k: _num(r.get(k), 4) for k in keys if k in r}


def print_report(doc: dict) -> None:
    """Print the report's sections as aligned tables (only sections with rows)."""
    meta = doc["meta"]
    filters = ", ".join(f"{k} {meta[k]}" for k in ("dimension", "metric") if meta.get(k))
    parts = []
    if meta["n_ratings"]:
        parts.append(f"{meta['n_ratings']} ratings by {meta['n_raters']} raters "
                     f"({meta['n_models']} models, {meta['n_prompts']} prompts)")
    if meta["n_rankings_rows"]:
        parts.append(f"{meta['n_rankings_rows']} ranked images")
    if meta["n_scores"]:
        parts.append(f"{meta['n_scores']} metric values ({', '.join(meta['metrics'])})")
    print(f"Study {meta['study']}{f' ({filters})' if filters else ''}: "
          f"{'; '.join(parts) or 'nothing to summarise'}. CIs: {meta['n_boot']} "
          f"prompt-bootstrap resamples, seed {meta['seed']}.")
    if not (doc["human"] or doc["rankings"]["models"] or doc["benchmarks"]["metric_means"]):
        print("\nNo ratings, rankings or metric scores yet: invite raters, import ratings "
              "(import-ratings) or score images (python -m concord score).")
        return
    _section("Leaderboard (human scores)", _leaderboard(doc["human"]), _human)
    by_dim = doc.get("by_dimension") or {}
    _section("Leaderboard per dimension", _leaderboard(by_dim.get("human", [])),
             lambda r: {"dimension": r["dimension"], **_human(r)})
    _section("Agreement (study)", doc["agreement"]["study"], _agreement)
    _section("Agreement per model", doc["agreement"]["model"], _agreement)
    _section("Agreement per dimension and model", by_dim.get("agreement", []), _agreement)
    _section("Raters: leave-one-out agreement", doc["agreement"]["raters"],
             _plain(("rater", "criterion", "spearman", "pearson", "n_items")))
    _section("Gold items", doc["agreement"]["gold"], _plain(
        ("rater", "criterion", "n_gold", "n_correct", "accuracy")))
    _print_rankings(doc["rankings"])
    _section("Human vs metric", doc["human_vs_metric"], _correlation)
    _print_benchmarks(doc["benchmarks"])


def _print_rankings(sections: dict) -> None:
    _section("Rankings: mean rank per model (1 = best)", sections["models"], _plain(
        ("criterion", "dimension", "model", "mean_rank", "std_rank", "n_prompts", "position")))
    _section("Rankings: Kendall's W", sections["kendalls_w"], _plain(
        ("criterion", "mean_w", "median_w", "n_prompts", "mean_raters")))
    _section("Rankings: position bias", sections["position_bias"], _plain(
        ("criterion", "spearman", "spearman_p", "chi2", "chi2_p", "dof", "n")))


def _print_benchmarks(bench: dict) -> None:
    _section("Metric means per model", bench["metric_means"], _plain(
        ("metric", "judge", "model", "mean", "n_images", "n_missing")))
    _section("PairComp", bench["paircomp"], _plain(
        ("metric", "judge", "model", "category", "arithmetic", "geometric", "n_pairs")))
    _section("GenEval 2 totals (x100)", bench["geneval2_totals"], _plain(
        ("metric", "judge", "model", "method", "score", "n_prompts")))
    _section("GenEval 2 Soft-TIFA AM per skill", bench["geneval2_by_skill"], _plain(
        ("judge", "model", "skill", "score", "n_questions")))
    _section("GenEval 2 Soft-TIFA GM per atom count", bench["geneval2_by_atomicity"], _plain(
        ("judge", "model", "atom_count", "score", "n_prompts")))
    overall = [r for r in bench["tiif_summary"] if r["group"] == "Overall"]
    _section("TIIF-Bench overall", overall, _plain(
        ("metric", "judge", "model", "variant", "score", "n_dimensions")))
    _section("GNED (lower is better)", bench["gned"], _plain(
        ("judge", "model", "variant", "gned", "recall", "n_images", "n_missing")))
    _section("Paraphrase consistency", bench["consistency"], _plain(
        ("metric", "judge", "model", "S_a", "S_r", "S_final", "n_abstract", "n_realistic")))
    _section("Benchmarks not computed", bench["problems"], _plain(
        ("benchmark", "metric", "judge", "message")))


"""The claims' tables of ``stats`` (without ``--json``): which models differ, metric
against metric, pair differences. Kept apart from ``concord.cli.stats`` (its size)."""

from __future__ import annotations

from collections.abc import Callable


def _num(value: object, digits: int = 3) -> str:
    if value is None:
        return "–"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def _ci(row: dict, prefix: str) -> str:
    low, high = row.get(f"{prefix}_low"), row.get(f"{prefix}_high")
    return "–" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def rank(row: dict) -> str:
    """``rank [low–high]`` of a leaderboard record."""
    if row.get("rank_mean_rater_means") is None:
        return "–"
    low, high = (row.get(f"rank_mean_rater_means_ci_boot_{e}") for e in ("low", "high"))
    span = "–" if low is None else (f"{low:.0f}" if low == high else f"{low:.0f}–{high:.0f}")
    return f"{row['rank_mean_rater_means']:.0f} [{span}]"


def _difference(r: dict) -> dict:
    return {"criterion": r["criterion"], "model A": r["model_a"], "model B": r["model_b"],
            "A − B": _num(r["mean_diff"]), "95% CI": _ci(r, "mean_diff_ci_boot"),
            "p perm (Holm)": _num(r["mean_diff_p_perm_holm"], 4),
            "p Wilcoxon (Holm)": _num(r["p_wilcoxon_holm"], 4), "prompts": r["n_prompts"]}


def _metrics(r: dict) -> dict:
    def label(side: str) -> str:
        judge = r[f"judge_{side}"]
        return f"{r[f'metric_{side}']}{f' ({judge})' if judge else ''}"
    return {"human": r["human"], "level": r["level"], "statistic": r["statistic"],
            "metric A": label("a"), "metric B": label("b"), "A": _num(r["value_a"]),
            "B": _num(r["value_b"]), "A − B": _num(r["diff"]),
            "95% CI": _ci(r, "diff_ci_boot"), "p perm (Holm)": _num(r["diff_p_perm_holm"], 4),
            "p Williams": _num(r["diff_p_williams"], 4)}


def _bt_difference(r: dict) -> dict:
    return {"source": r["source"], "ties": r["tie_model"], "model A": r["model_a"],
            "model B": r["model_b"], "score A − B": _num(r["score_diff"], 1),
            "95% CI": "–" if r["score_diff_ci_boot_low"] is None else
            f"[{r['score_diff_ci_boot_low']:.1f}, {r['score_diff_ci_boot_high']:.1f}]",
            "direct": r["n_direct"]}


def print_claims(doc: dict, section: Callable[[str, list, Callable], None]) -> None:
    """The claims' tables over all prompts (per dimension: ``--json``)."""
    section("Which models differ (all prompts; paired over prompts)",
            [r for r in doc.get("model_differences", []) if r["dimension"] == "all"],
            _difference)
    section("Metric against metric (all prompts)",
            [r for r in doc.get("metric_comparisons", []) if r["dimension"] == "all"],
            _metrics)
    section("Pairs: Bradley-Terry differences",
            doc["pairs"].get("bradley_terry_differences", []), _bt_difference)

"""docs/stats-json.md and ``stats --json`` stay in step: every key of the document is
documented in its section, and every documented key is in the document.

The documents: ``stats --json --by-dimension`` of a real study (ratings, a derived O,
two metrics, an excluded rater) and ``full_report`` of frames with rankings, pair
judgments and gold items, and a ``stats --json`` of a pair study with gold pairs. The
document's tables name fields in backticks; ``<stat>`` and ``<level>`` stand for each
correlation and α level, and ``…_high`` / ``_high`` after ``x_low`` for ``x_high``.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from concord.cli import main
from concord.services import exclusions
from concord.stats import IMAGENHUB_O, full_report
from tests.foundation_helpers import seed_study
from tests.pair_helpers import seed_pair_study
from tests.stats.conftest import _make_ratings
from tests.stats.pairs_helpers import davidson_pairs, plackett_luce_rankings

DOC = Path(__file__).resolve().parents[1] / "docs" / "stats-json.md"
EXPAND = {"<stat>": ("spearman", "kendall_tau_b", "pearson"),
          "<level>": ("nominal", "ordinal", "interval")}
# Sections filled only by data these fixtures do not hold; their own tests cover them
# (tests/stats/test_stats_benchmarks.py, tests/test_checklist.py). Their list names
# are still checked.
NOT_FILLED = {"benchmarks", "checklist"}
# Said once for every record by the conventions at the top of the page.
EVERYWHERE = {"study"}
# Backticked words of the "fields" cells that are values, not fields.
VALUES = {"pairs", "rankings", "davidson", "half", "tie", "category", "image", "prompt",
          "pair", "rater", "metric", "too_fast", "straight_lining", "gold_failures",
          "ratings:<criterion>", "rankings:<criterion>", "all", "short", "long", "Average",
          "soft_tifa_am", "soft_tifa_gm", "tifa", "vqascore", "Basic_Attribute", "Overall",
          "<Level>_Following_Overall", "overall", "model", "item", "mean_image_means",
          "mean_rater_means", "bradley_terry", "per_model"}
# Fields a list has only in some records (said so in the document).
OPTIONAL = {("pairs", "problems"): {"metric", "judge"}}


def _sections() -> dict[str, str]:
    out: dict[str, str] = {}
    key = "intro"
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            found = re.search(r"`([^`]+)`", line)
            key = found.group(1) if found else line[3:].strip().lower()
        out[key] = out.get(key, "") + line + "\n"
    return out


def _expand(tokens: list[str]) -> set[str]:
    names: set[str] = set()
    last = ""
    for token in tokens:
        if token.startswith(("…", "_")) and last.endswith("_low"):
            token = last[: -len("_low")] + token.lstrip("…").replace("_", "_", 1)
            token = token.replace("__", "_")
        for pattern, words in EXPAND.items():
            if pattern in token:
                names |= {token.replace(pattern, w) for w in words}
                break
        else:
            names.add(token)
        last = token
    return names


def _ticked(text: str) -> list[str]:
    """Backticked words outside code blocks."""
    return re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))


def _documented(text: str) -> set[str]:
    return _expand(_ticked(text))


def _fields(cell: str) -> set[str]:
    """The field names of a "fields" cell: backticked identifiers that are not values."""
    return {t for t in _expand(_ticked(cell)) if re.fullmatch(r"[a-z][a-z0-9_]*", t)} - VALUES


def _tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    tables, rows = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            tables.append((rows[0], list(rows[2:])))
            rows = []
    return tables


@pytest.fixture(scope="module")
def documents(tmp_path_factory) -> list[dict]:
    from concord.store.db import open_db

    tmp = tmp_path_factory.mktemp("docs")
    db_path = tmp / "doc.db"
    db = open_db(db_path)
    seed_study(db, tmp)
    exclusions.exclude_rater(db, "dash", "cat", "left early")
    seed_pair_study(db, tmp, gold="p0,alpha,pair,delta\n")
    docs = [json.loads(_stats_json(db_path, study, extra))
            for study, extra in (("dash", ["--by-dimension"]), ("duel", []))]
    db.close()
    ratings = _make_ratings(3, prompts=12, models=3, raters=3)
    ratings["seconds"] = np.where(ratings["image_id"] % 5 == 0, 0.5, 6.0)   # some too fast
    rankings = plackett_luce_rankings([0.5, 0.0, -0.5], prompts=12, seed=1)
    pairs = davidson_pairs([0.5, 0.0, -0.5], nu=0.4, prompts=12, seed=2)
    scores = _scores(ratings)
    gold = ratings[ratings["prompt_id"] == "p00"][["image_id", "criterion"]].drop_duplicates()
    gold = gold.assign(unit="image", expected=1.0, tolerance=0.0, study="s")
    docs.append(full_report(ratings, rankings.assign(study="s"), scores,
                            pairs=pairs.assign(study="s"), gold=gold, n_boot=30, n_perm=30,
                            derived=[IMAGENHUB_O]))
    # A model that never lost: Bradley–Terry has no finite MLE, listed in problems.
    unbeaten = pairs.assign(outcome=np.where(pairs["left_model"] == "m0", "left",
                                             np.where(pairs["right_model"] == "m0", "right",
                                                      pairs["outcome"])))
    docs.append(full_report(ratings.iloc[:0], pairs=unbeaten.assign(study="s"), n_boot=5,
                            n_perm=5))
    return docs


def _stats_json(db_path: Path, study: str, extra: list[str]) -> str:
    """What ``python -m concord stats --json`` prints."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["--db", str(db_path), "stats", "--study", study, "--json", "--n-boot",
                     "30", "--n-perm", "30", *extra]) == 0
    return buf.getvalue()


def _scores(ratings: pd.DataFrame) -> pd.DataFrame:
    images = ratings.groupby(["study", "prompt_id", "model", "sample", "image_id",
                              "dimension"])["value"].mean().reset_index()
    rng = np.random.default_rng(0)
    return pd.concat([images.assign(metric=m, judge="",
                                    value=images["value"] + rng.normal(0, s, len(images)))
                      for m, s in (("vqascore", 0.2), ("clip", 0.5))], ignore_index=True)


def _keys(docs: list[dict]) -> dict[tuple[str, ...], set[str]]:
    """Per path (top key, list name): the keys of its records (union over documents)."""
    out: dict[tuple[str, ...], set[str]] = {(): set()}
    for doc in docs:
        out[()] |= set(doc)
        for top, value in doc.items():
            if isinstance(value, list):
                for r in value:
                    out.setdefault((top,), set()).update(r)
                out.setdefault((top,), set())
            elif isinstance(value, dict):
                out.setdefault((top,), set()).update(value)
                for name, sub in value.items():
                    if isinstance(sub, list):
                        out.setdefault((top, name), set())
                        for r in sub:
                            if isinstance(r, dict):
                                out[(top, name)].update(r)
                    elif isinstance(sub, dict) and top == "meta" and name != "quality":
                        out.setdefault((top, name), set()).update(sub)
    return out


def test_every_key_of_the_document_is_documented(documents):
    sections = _sections()
    assert _documented(sections["intro"]) >= EVERYWHERE
    top = _documented(sections["top level"])
    keys = _keys(documents)
    missing = []
    for path, names in keys.items():
        if not path:
            missing += [f"top-level {k}" for k in names - top]
            continue
        where = sections.get(path[0], "")
        if path[0] == "by_dimension" and len(path) == 2:
            where += sections["human" if path[1] == "human" else "agreement"]
        documented = _documented(where) | EVERYWHERE
        missing += [f"{'.'.join(path)}.{k}" for k in names - documented]
    assert not missing, f"undocumented keys in docs/stats-json.md: {sorted(missing)}"


def test_every_documented_key_is_in_the_document(documents):
    sections = _sections()
    keys = _keys(documents)
    absent = []
    for section, text in sections.items():
        if section in ("intro", "example (abridged)"):
            continue
        for header, rows in _tables(text):
            first = header[0].strip().lower()
            for row in rows:
                names = _expand(_ticked(row[0]))
                if section == "top level" and first == "key":
                    absent += [n for n in names if n not in keys[()]]
                elif first == "list":
                    absent += [f"{section}.{n}" for n in names if n not in keys[(section,)]]
                    for name in names if section not in NOT_FILLED else ():
                        have = keys.get((section, name), set()) | OPTIONAL.get(
                            (section, name), set())
                        absent += [f"{section}.{name}.{f}" for f in _fields(row[1]) - have]
                elif first == "field" and section not in NOT_FILLED:
                    have = set().union(*(v for k, v in keys.items() if k[:1] == (section,)))
                    absent += [f"{section}.{n}" for n in names if n not in have]
    assert not absent, f"documented but not in stats --json: {sorted(absent)}"


def test_the_checks_fail_on_an_undocumented_or_a_vanished_key(documents):
    extra = [dict(documents[0], human=[{**documents[0]["human"][0], "brand_new": 1}])]
    with pytest.raises(AssertionError, match="brand_new"):
        test_every_key_of_the_document_is_documented(extra + documents)
    gone = [{**d, "model_differences": [{k: v for k, v in r.items() if k != "p_wilcoxon"}
                                        for r in d.get("model_differences", [])]}
            for d in documents]
    with pytest.raises(AssertionError, match="p_wilcoxon"):
        test_every_documented_key_is_in_the_document(gone)

"""A pairwise study judged through the service layer, for the statistics, export and
dashboard tests: raters prefer the stronger model (Bradley–Terry odds), with some ties."""

from __future__ import annotations

import random
from pathlib import Path

from concord.services import studies
from concord.services.labelling import pairs
from concord.services.metrics import scores as metric_scores
from concord.store import items
from concord.store import raters as rater_store
from tests.helpers import make_folder_study

STRENGTH = {"alpha": 4.0, "beta": 2.0, "gamma": 1.0, "delta": 0.5}


def judge_everything(db, study: str, rater: str, rnd: random.Random,
                     prefer=None) -> int:
    """Judge every pair the rater is given; returns how many."""
    rid = rater_store.get_rater(db, rater).id
    n = 0
    while (item := pairs.next_pair(db, study, rid)) is not None:
        left = items.image(db, item.left.image_id).model
        right = items.image(db, item.right.image_id).model
        p_left = STRENGTH[left] / (STRENGTH[left] + STRENGTH[right])
        roll = rnd.random()
        outcome = ("tie" if roll < 0.08 else "both_bad" if roll < 0.12 else
                   "left" if rnd.random() < p_left else "right")
        if prefer is not None:
            outcome = prefer(left, right)
        pairs.submit(db, study, rid, item, outcome)
        n += 1
    return n


def seed_pair_study(db, root: Path, name: str = "duel", *, prompts: int = 8,
                    raters: tuple[str, ...] = ("ann", "ben", "cat"), protocol: str = "pair",
                    extra: str = "", gold: str | None = None, scores: bool = True,
                    seed: int = 3) -> Path:
    """A study of the four STRENGTH models, every pair judged by every rater."""
    folder = root / name
    if gold is not None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "gold.csv").write_text("prompt_id,model,criterion,expected\n" + gold)
        extra += "gold: gold.csv\n"
    manifest = make_folder_study(folder, prompts=prompts, models=tuple(STRENGTH),
                                 protocol=protocol, k=len(raters), extra=extra)
    studies.import_manifest(db, manifest)
    studies.invite(db, name, list(raters), "http://x")
    rnd = random.Random(seed)
    for rater in raters:
        judge_everything(db, name, rater, rnd)
    if scores:
        rows = ["prompt_id,model,metric,value"]
        for p in range(prompts):
            for model, strength in STRENGTH.items():
                rows.append(f"p{p},{model},vqascore,{strength + rnd.gauss(0, 0.5):.4f}")
        (root / f"{name}-scores.csv").write_text("\n".join(rows) + "\n")
        metric_scores.import_scores(db, name, "csv", root / f"{name}-scores.csv")
    return manifest

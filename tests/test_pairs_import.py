"""Pairwise A/B studies at import: the balanced design, the manifest's `pairs:` section,
gold pairs, bad input (one clear line, nothing imported) and the m601 migration."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from sqlite_utils import Database

from concord.pair_design import schedule
from concord.plan import StudyPlan
from concord.services import studies
from concord.store import studies as study_store
from concord.store.migrations import migrations
from tests.foundation_helpers import import_fails, make_folder_study

pytestmark = pytest.mark.both_engines

MODELS = ("alpha", "beta", "gamma", "delta")


def _pairs(db, study="pp"):
    """(prompt key, model, model) of every pair, models in name order, and gold flag."""
    rows = db.execute(
        "SELECT p.key, ma.name, mb.name, pr.better IS NOT NULL FROM pairs pr JOIN prompts p"
        " ON p.id = pr.prompt_id JOIN images ia ON ia.id = pr.image_a JOIN models ma ON"
        " ma.id = ia.model_id JOIN images ib ON ib.id = pr.image_b JOIN models mb ON"
        " mb.id = ib.model_id JOIN studies s ON s.id = pr.study_id WHERE s.name = ?",
        [study]).fetchall()
    return [(k, *sorted((a, b)), bool(g)) for k, a, b, g in rows]


@pytest.mark.parametrize(("n_models", "n_prompts", "per_prompt"),
                         [(8, 13, 5), (5, 7, 3), (3, 10, 1), (8, 40, 4), (16, 30, 7), (4, 9, 6)])
def test_every_model_pair_is_asked_equally_often_within_one(n_models, n_prompts, per_prompt):
    models = [f"m{i}" for i in range(n_models)]
    out = schedule([(f"p{i}", models) for i in range(n_prompts)], per_prompt=per_prompt,
                   seed=11)
    counts = Counter(tuple(sorted(p)) for pairs in out.values() for p in pairs)
    assert len(counts) == len(list(itertools.combinations(models, 2))) or \
        n_prompts * per_prompt < len(list(itertools.combinations(models, 2)))
    full = {tuple(sorted(p)): counts.get(tuple(sorted(p)), 0)
            for p in itertools.combinations(models, 2)}
    assert max(full.values()) - min(full.values()) <= 1
    assert all(len(pairs) == per_prompt and len(set(pairs)) == per_prompt
               for pairs in out.values())
    appearances = Counter(m for pairs in out.values() for p in pairs for m in p)
    assert max(appearances.values()) - min(appearances.values()) <= 2


def test_all_pairs_and_the_seed_decides_ties():
    models = ["a", "b", "c", "d"]
    prompts = [(f"p{i}", models) for i in range(6)]
    assert all(len(v) == 6 for v in schedule(prompts, per_prompt=None, seed=0).values())
    one = schedule(prompts, per_prompt=2, seed=1)
    assert one == schedule(prompts, per_prompt=2, seed=1)
    assert any(schedule(prompts, per_prompt=2, seed=s) != one for s in range(2, 6))


def test_design_is_incremental_and_skips_gold_pairs():
    models = ["a", "b", "c"]
    first = schedule([("p0", models)], per_prompt=1, seed=0)
    more = schedule([("p0", models), ("p1", models), ("p2", models)], per_prompt=1, seed=0,
                    existing=first, excluded={"p1": [("a", "b")]})
    assert "p0" not in more  # already has its pair
    asked = [*first["p0"], *more["p1"], *more["p2"]]
    assert sorted(tuple(sorted(p)) for p in asked) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert ("a", "b") not in more["p1"]


def test_import_schedules_pairs_and_records_the_settings(tmp_path, db):
    manifest = make_folder_study(tmp_path / "pp", prompts=6, models=MODELS, protocol="pair",
                                 k=2, extra="pairs:\n  pairs_per_prompt: 2\n  seed: 9\n"
                                            "  raters_per_pair: 3\n")
    summary = studies.import_manifest(db, manifest)
    assert summary.pairs_added == 12
    study = study_store.get_study(db, "pp")
    assert study.protocol == "pair" and study.has_pairs
    assert study.settings["pairs"] == {"pairs_per_prompt": 2, "seed": 9, "raters_per_pair": 3,
                                       "sample": 0}
    assert study.k_for("pair") == 3 and study.k == 2
    assert study.rubric == "tiif-ranking"
    counts = Counter((a, b) for _, a, b, _ in _pairs(db))
    assert sorted(counts.values()) == [2] * 6  # 12 pairs over the 6 model pairs
    again = studies.import_manifest(db, manifest)
    assert not again.changed


def test_a_later_import_adds_pairs_for_new_prompts_only(tmp_path, db):
    manifest = make_folder_study(tmp_path / "pp", prompts=3, models=MODELS, protocol="both",
                                 extra="pairs:\n  pairs_per_prompt: 1\n")
    studies.import_manifest(db, manifest)
    before = _pairs(db)
    make_folder_study(tmp_path / "pp", prompts=6, models=MODELS, protocol="both",
                      extra="pairs:\n  pairs_per_prompt: 1\n")
    assert studies.import_manifest(db, manifest).pairs_added == 3
    after = _pairs(db)
    assert set(before) <= set(after)
    assert Counter(p for p, *_ in after) == Counter({f"p{i}": 1 for i in range(6)})
    assert len({(a, b) for _, a, b, _ in after}) == 6  # 6 prompts, 6 different model pairs


def test_the_pair_score_conventions_are_study_settings(tmp_path, db):
    studies.import_manifest(db, make_folder_study(
        tmp_path / "s", models=("a", "b", "c"), protocol="pair",
        extra="pairs:\n  bt_prior: 0.5\n  elo_scale: 100\n  bootstrap: vote\n"))
    settings = study_store.get_study(db, "s").settings
    assert settings["pair_scores"] == {"bt_prior": 0.5, "elo_scale": 100, "bootstrap": "vote"}
    assert "bt_prior" not in settings["pairs"]


def test_all_pairs_by_default_and_score_studies_without_a_section_have_none(tmp_path, db):
    studies.import_manifest(db, make_folder_study(tmp_path / "pp", prompts=2, models=MODELS,
                                                  protocol="pair"))
    assert len(_pairs(db)) == 12
    studies.import_manifest(db, make_folder_study(tmp_path / "sc", prompts=2, models=MODELS))
    assert _pairs(db, "sc") == [] and not study_store.get_study(db, "sc").has_pairs
    assert "pairs" not in study_store.get_study(db, "sc").settings


def test_gold_pairs_are_stored_with_the_better_image(tmp_path, db):
    manifest = make_folder_study(tmp_path / "pp", prompts=3, models=MODELS, protocol="pair",
                                 extra="pairs:\n  pairs_per_prompt: 1\ngold: gold.csv\n")
    (tmp_path / "pp" / "gold.csv").write_text(
        "prompt_id,model,criterion,expected\np1,gamma,pair,alpha\np2,beta,pair,delta\n")
    summary = studies.import_manifest(db, manifest)
    assert summary.gold_added == 2
    gold = db.execute("SELECT p.key, m.name FROM pairs pr JOIN images i ON i.id = pr.better"
                      " JOIN models m ON m.id = i.model_id JOIN prompts p ON"
                      " p.id = pr.prompt_id ORDER BY p.key").fetchall()
    assert gold == [("p1", "gamma"), ("p2", "beta")]
    data = [(k, a, b) for k, a, b, g in _pairs(db) if not g]
    assert len(data) == 3 and ("p1", "alpha", "gamma") not in data
    assert not studies.import_manifest(db, manifest).changed


def _bad(tmp_path, db, *, models=MODELS, protocol="pair", extra="", gold=None):
    manifest = make_folder_study(tmp_path / "bad", prompts=2, models=models,
                                 protocol=protocol, extra=extra)
    if gold is not None:
        (tmp_path / "bad" / "gold.csv").write_text("prompt_id,model,criterion,expected\n" + gold)
        manifest.write_text(manifest.read_text() + "gold: gold.csv\n")
    err = import_fails(db, manifest)
    assert len(err.problems) == 1, err.problems
    assert "\n" not in str(err)
    assert db.execute("SELECT COUNT(*) FROM studies").fetchone()[0] == 0
    return err.problems[0], manifest


@pytest.mark.parametrize(("protocol", "extra"), [
    ("pair", ""), ("score", "pairs:\n  enabled: true\n"), ("score", "pairs: {}\n")])
def test_pairs_of_one_model_are_refused(tmp_path, db, protocol, extra):
    p, manifest = _bad(tmp_path, db, models=("solo",), protocol=protocol, extra=extra)
    assert (p.file, p.field) == (str(manifest), "pairs")
    assert "at least 2 models" in p.message and "solo" in p.message


@pytest.mark.parametrize(("extra", "field", "message"), [
    ("pairs:\n  pairs_per_promt: 2\n", "pairs.pairs_per_promt", "unknown key"),
    ("pairs:\n  pairs_per_prompt: 0\n", "pairs.pairs_per_prompt", "got 0"),
    ("pairs:\n  pairs_per_prompt: 7\n", "pairs.pairs_per_prompt", "more than the 6 pairs"),
    ("pairs:\n  pairs_per_prompt: some\n", "pairs.pairs_per_prompt", "'some'"),
    ("pairs:\n  raters_per_pair: 0\n", "pairs.raters_per_pair", "got 0"),
    ("pairs:\n  enabled: false\n", "pairs.enabled", "protocol pair always"),
    ("pairs:\n  enabled: maybe\n", "pairs.enabled", "'maybe'"),
    ("pairs: [1, 2]\n", "pairs", "expected a mapping"),
    ("pairs:\n  elo_base: 1\n", "pairs", "odds must not be 1"),
    ("pairs:\n  bt_prior: -2\n", "pairs", "bt_prior must be a finite number >= 0"),
    ("pairs:\n  bootstrap: rater\n", "pairs", "bootstrap"),
    ("pairs:\n  elo_scale: .inf\n", "pairs", "scale must be a finite number > 0"),
])
def test_bad_pairs_section(tmp_path, db, extra, field, message):
    p, manifest = _bad(tmp_path, db, extra=extra)
    assert (p.file, p.field) == (str(manifest), field)
    assert message in p.message


@pytest.mark.parametrize(("gold", "protocol", "field", "message"), [
    ("p0,alpha,pair,omega\n", "pair", "expected", "unknown model 'omega'"),
    ("p0,omega,pair,alpha\n", "pair", "model", "unknown model 'omega'"),
    ("p0,alpha,pair,alpha\n", "pair", "expected", "two different models"),
    ("p0,alpha,pair,beta\np0,beta,pair,alpha\n", "pair", "model", "already has a gold pair"),
    ("p0,alpha,pair,beta\n", "score", "criterion", "needs protocol pair or a pairs section"),
    ("p0,alpha,rank,1\n", "pair", "criterion", "needs protocol rank or both"),
])
def test_bad_gold_pair(tmp_path, db, gold, protocol, field, message):
    p, _ = _bad(tmp_path, db, protocol=protocol, gold=gold)
    assert p.file.endswith("gold.csv") and p.field == field and p.row is not None
    assert message in p.message


def test_migration_keeps_studies_and_assignments_and_their_references(tmp_path):
    db = Database(tmp_path / "old.db")
    db.execute("PRAGMA foreign_keys = ON")
    migrations.apply(db, stop_before="m601_pairs")
    study_store.apply_plan(db, StudyPlan(name="s", protocol="both", rubric=None, root=None,
                                         models=["m"]))
    sid = db.execute("SELECT id FROM studies").fetchone()[0]
    db.execute("INSERT INTO raters (name, created_at) VALUES ('r', 'now')")
    db.execute("INSERT INTO assignments (study_id, rater_id, unit, item_id, status, opened_at)"
               " VALUES (?, 1, 'prompt', 5, 'open', 'now')", [sid])
    db.conn.commit()
    migrations.apply(db)
    assert migrations.pending(db) == []
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute("SELECT name, protocol FROM studies").fetchall() == [("s", "both")]
    assert db.execute("SELECT COUNT(*) FROM models").fetchone()[0] == 1
    assert db.execute("SELECT unit, item_id FROM assignments").fetchall() == [("prompt", 5)]
    assert {i.name for i in db["assignments"].indexes} >= {"assignments_item",
                                                           "assignments_coverage"}
    db.execute("UPDATE studies SET protocol = 'pair'")
    db.execute("UPDATE assignments SET unit = 'pair'")
    db.execute("DELETE FROM studies")  # the references still cascade
    assert db.execute("SELECT COUNT(*) FROM models").fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM assignments").fetchone()[0] == 0


def test_the_import_command_counts_the_pairs(tmp_path, capsys):
    from concord.cli import main

    manifest = make_folder_study(tmp_path / "pp", prompts=2, models=MODELS, protocol="pair")
    assert main(["--db", str(tmp_path / "c.db"), "import", str(manifest)]) == 0
    assert ", 12 pairs" in capsys.readouterr().out


def _reference_pick(prompt, options, need, have, counts, totals, seed):
    """The greedy design as the module docstring states it: each pick the least option by
    (model-pair count, models' counts in this prompt, in the study, keyed hash), every
    option asked again per pick (quadratic; the reference of the heap in pair_design)."""
    from concord.pair_design import _key, _tiebreak

    here = Counter(m for pair in have for m in pair)
    left, chosen = list(options), []
    for _ in range(max(need, 0)):
        best = min(left, key=lambda p: (counts[_key(p)], max(here[p[0]], here[p[1]]),
                                        here[p[0]] + here[p[1]], totals[p[0]] + totals[p[1]],
                                        _tiebreak(seed, prompt, _key(p))))
        left.remove(best)
        chosen.append(best)
        counts[_key(best)] += 1
        here.update(best)
        totals.update(best)
    return chosen


@pytest.mark.parametrize("seed", range(6))
def test_the_design_equals_the_plain_greedy_choice(monkeypatch, seed):
    import random

    from concord import pair_design

    rng = random.Random(seed)
    models = [f"m{i}" for i in range(rng.randrange(3, 12))]
    prompts = [(f"p{i}", rng.sample(models, rng.randrange(2, len(models) + 1)))
               for i in range(rng.randrange(5, 25))]
    existing = {"p0": [tuple(prompts[0][1][:2])]}
    for per_prompt in (1, 3, 8, None):
        fast = schedule(prompts, per_prompt=per_prompt, seed=seed, existing=existing)
        with monkeypatch.context() as m:
            m.setattr(pair_design, "_pick", _reference_pick)
            plain = schedule(prompts, per_prompt=per_prompt, seed=seed, existing=existing)
        # The same pairs per prompt (a prompt that asks all its pairs takes them in model
        # order, the greedy loop in its own order).
        assert {k: sorted(v) for k, v in fast.items()} == \
            {k: sorted(v) for k, v in plain.items()}


def test_all_pairs_of_many_models_are_scheduled_at_once():
    models = [f"m{i:03d}" for i in range(300)]
    out = schedule([(f"p{i}", models) for i in range(3)], per_prompt=None, seed=0)
    assert [len(v) for v in out.values()] == [44_850] * 3
    assert out["p0"] == list(itertools.combinations(models, 2))

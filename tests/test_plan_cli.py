"""``python -m concord plan``: from a pilot study in a real database or typed components;
bad input is one line and exit 1."""

from __future__ import annotations

import json

import numpy as np
import pytest

from concord.cli import main
from concord.services.exports import labels
from concord.services.report.planning import pilot_components
from concord.stats.power import components_from_pilot, plan_table
from tests.foundation_helpers import MODELS

pytestmark = pytest.mark.both_engines

TYPED = ["--sd-prompt", "0.3", "--sd-prompt-model", "0.4", "--sd-rater", "0.6",
         "--models", "4", "--difference", "0.12"]


def _plan(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_typed_plan_json_equals_the_library_and_is_seeded(capsys):
    args = [*TYPED, "--prompts", "20,80", "--raters", "1,3", "--n-sims", "200", "--json"]
    code, out, _ = _plan(capsys, "plan", *args)
    assert code == 0
    doc = json.loads(out)
    assert [(r["raters"], r["prompts"]) for r in doc["table"]] == [(1, 20), (1, 80),
                                                                   (3, 20), (3, 80)]
    from concord.stats.power import Components
    ref = plan_table(Components(0.3, 0.4, 0.6, 0.0, 4, 0.12), prompts=[20, 80],
                     raters=[1, 3], n_sims=200)
    assert [r["power_diff"] for r in doc["table"]] == ref["power_diff"].tolist()
    assert {r["raters"] for r in doc["needed"]} == {1, 3}
    assert _plan(capsys, "plan", *args)[1] == out                     # same seed, same numbers


def test_plan_from_a_pilot_study(seeded, capsys):
    db, db_path = seeded
    code, out, err = _plan(capsys, "--db", str(db_path), "plan", "--study", "dash",
                           "--criterion", "SC", "--metric", "vqascore", "--metric", "gned",
                           "--prompts", "10,40", "--n-sims", "100", "--json")
    assert code == 0, err
    doc = json.loads(out)
    ratings = labels.ratings(db, "dash")
    ref = components_from_pilot(ratings[ratings["criterion"] == "SC"])
    assert doc["criterion"] == "SC"
    assert doc["components"]["sd_rater"] == pytest.approx(ref.sd_rater, abs=1e-12)
    assert doc["components"]["r_hy"] < 0 < doc["components"]["r_hx"]  # gned: lower = better
    assert np.isfinite([r["power_metrics"] for r in doc["table"]]).all()
    # Without a criterion the derived O of the rubric is planned for.
    components, criterion = pilot_components(db, "dash")
    assert criterion == "O" and components.n_models == len(MODELS)


@pytest.mark.parametrize(("args", "message"), [
    (["--difference", "0.1"], "give --difference and --sd-prompt"),
    ([*TYPED[:-2], "--difference", "nan"], "difference must be a finite number"),
    ([*TYPED, "--sd-rater", "-1"], "sd_rater must be"),
    ([*TYPED, "--r-hx", "0.5"], "together"),
    ([*TYPED, "--n-sims", "100000", "--prompts", "100000"], "limit"),
    (["--study", "nope"], "no study named 'nope'"),
])
def test_bad_plans_are_one_line(database_at, capsys, args, message):
    code, _, err = _plan(capsys, "--db", str(database_at("x")), "plan", *args)
    assert code == 1 and message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("grid", ["--prompts=1", "--prompts=99999999999999999999",
                                  "--raters=0", "--prompts=a,b", "--n-sims=1,2",
                                  f"--prompts={','.join(['10'] * 51)}", "--power=1.5"])
def test_bad_grids_are_refused_by_the_parser(capsys, grid):
    with pytest.raises(SystemExit) as exc:
        main(["plan", *TYPED, grid])
    assert exc.value.code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_pilot_errors_name_what_is_missing(seeded, capsys):
    _, db_path = seeded
    for args, message in ((["--criterion", "XX"], "no criterion 'XX'"),
                          (["--metric", "vqascore", "--metric", "nope"], "no scores of metric"),
                          (["--metric", "vqascore"], "two different metrics")):
        code, _, err = _plan(capsys, "--db", str(db_path), "plan", "--study", "dash", *args)
        assert code == 1 and message in err, err

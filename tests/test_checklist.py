"""Rubric checklists: the YAML format and its errors, the derivation, and the service
(store, override with a reason, undo, edit, replay)."""

from __future__ import annotations

import copy
from itertools import product
from pathlib import Path

import pandas as pd
import pytest
import yaml

from concord.errors import RatingError
from concord.importers.imagenhub_tsv import TASK_RUBRICS
from concord.rubrics import DEFAULT_RUBRICS_DIR, RubricError, load_rubric, load_rubric_by_id
from concord.services.labelling import checklist, rating
from concord.services.labelling.common import new_submission
from concord.store import checklists as checklist_store
from tests.foundation_helpers import invited, make_folder_study
from tests.helpers import target_of

pytestmark = pytest.mark.both_engines

SCALE = [0, 0.5, 1]
BASE = {
    "id": "x", "title": "T", "task": "t", "source": {"title": "S"}, "scale": SCALE,
    "criteria": [
        {"key": k, "name": k, "definition": "d",
         "levels": [{"value": v, "label": str(v), "description": "x"} for v in SCALE]}
        for k in ("SC", "PR")],
    "checklist": {"SC": {
        "conditions": [{"id": "subject", "text": "The image has the subject."},
                       {"id": "attributes", "text": "The attributes are right."}],
        # ImagenHub's 1 / 0.5 / 0: all conditions hold, some hold, none holds.
        "derive": [{"value": 1, "when": {"all_ticked": ["subject", "attributes"]}},
                   {"value": 0.5, "when": {"any_ticked": ["subject", "attributes"]}},
                   {"value": 0}]}},
}


def _load(tmp_path: Path, data) -> object:
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return load_rubric(path)


def _problems(tmp_path: Path, change) -> list[str]:
    data = copy.deepcopy(BASE)
    change(data)
    with pytest.raises(RubricError) as info:
        _load(tmp_path, data)
    return [f"{p.key}: {p.message}" for p in info.value.problems]


def test_all_some_none_rules_derive_one_half_zero(tmp_path):
    rubric = _load(tmp_path, BASE)
    sc = rubric.checklist("SC")
    assert rubric.checklist("PR") is None
    assert sc.derive({"subject": True, "attributes": True}) == 1
    assert sc.derive({"subject": True}) == 0.5
    assert sc.derive({"attributes": True, "subject": False}) == 0.5
    assert sc.derive({}) == 0
    # The conditions take the digits; SC's level keys (bound only when the study rates
    # without the checklist) and PR's row stay.
    assert [lv.key for lv in rubric.criterion("SC").levels] == ["1", "2", "3"]
    assert [c.key for c in sc.conditions] == ["1", "2"]
    assert [lv.key for lv in rubric.criterion("PR").levels] == ["q", "w", "e"]


def test_imagenhub_editing_rules_follow_the_guide():
    sc = load_rubric_by_id("imagenhub-text-guided-editing").checklist("SC")
    every = dict.fromkeys(sc.ids, True)
    assert sc.derive(every) == 2
    assert sc.derive({**every, "no_extra_edits": False}) == 1       # unnecessary edits
    assert sc.derive({**every, "natural_complete": False}) == 0.5  # unnatural / incomplete
    assert sc.derive({**every, "same_background": False}) == 0     # a different background
    assert sc.derive({**every, "instruction_done": False}) == 0
    pr = load_rubric_by_id("imagenhub-text-to-image").checklist("PR")
    assert pr.derive({"no_obvious_flaws": True, "no_minor_flaws": True}) == 1
    assert pr.derive({"no_obvious_flaws": True, "photoreal": True}) == 0.5



# Per task rubric: the conditions left unticked (all others ticked) and the level the
# rubric's own level descriptions give for that case.
LEVEL_CASES = {
    "imagenhub-subject-driven-generation": [
        ("SC", (), 2),
        ("SC", ("setting_fits",), 0),            # setting off: 0 however good the subject
        ("SC", ("subject_recognisable",), 0),
        ("SC", ("coarse_traits_match",), 0.5),   # coarse traits differ, fine ones match
        ("SC", ("coarse_traits_match", "fine_details_match"), 0.5),
        ("SC", ("fine_details_match",), 1),
        ("PR", (), 2),
        ("PR", ("no_obvious_flaws",), 0),
        ("PR", ("key_objects_clean",), 0.5),
        ("PR", ("minor_objects_clean",), 1),
        ("PR", ("photoreal",), 1),
    ],
    "imagenhub-subject-driven-editing": [
        ("SC", (), 2),
        ("SC", ("same_scene",), 0),              # a different scene, the subject perfect
        ("SC", ("subject_recognisable",), 0),
        ("SC", ("coarse_traits_match",), 0.5),
        ("SC", ("no_clear_scene_changes",), 0.5),
        ("SC", ("fine_details_match", "no_clear_scene_changes"), 0.5),  # lower answer
        ("SC", ("fine_details_match",), 1),
        ("SC", ("scene_untouched",), 1),         # small scene changes
        ("PR", (), 2),
        ("PR", ("no_large_flaws",), 0),
        ("PR", ("key_objects_clean",), 0.5),
        ("PR", ("minor_objects_clean",), 1),
        ("PR", ("photoreal",), 1),
    ],
    "imagenhub-multi-subject-generation": [
        ("SC", (), 2),
        ("SC", ("all_subjects_present",), 0),    # no chair at all
        ("SC", ("all_subjects_recognisable",), 0),  # another chair altogether
        ("SC", ("coarse_traits_match",), 0.5),   # the chair has the wrong colour
        ("SC", ("action_shown",), 0.5),          # next to the chair, not under it
        ("SC", ("coarse_traits_match", "action_shown"), 0.5),
        ("SC", ("fine_details_match",), 1),      # the chair has the wrong texture
        ("SC", ("action_exact",), 1),            # the action only roughly
        ("PR", (), 2),
        ("PR", ("no_obvious_flaws",), 0),
        ("PR", ("key_objects_clean",), 0.5),
        ("PR", ("minor_objects_clean",), 1),
        ("PR", ("photoreal",), 1),
    ],
    "imagenhub-control-guided-generation": [
        ("SC", (), 2),
        ("SC", ("some_attributes",), 0),         # no required attribute followed
        ("SC", ("all_attributes",), 0.5),        # only some attributes
        ("SC", ("natural_finished",), 0.5),      # unnatural or unfinished
        ("SC", ("no_harmful_extras",), 1),       # an unrequested object spoils the scene
        ("PR", (), 2),
        ("PR", ("no_large_flaws",), 0),
        ("PR", ("key_objects_clean",), 0.5),
        ("PR", ("minor_objects_clean",), 1),
        ("PR", ("photoreal",), 1),
    ],
    "imagenhub-style-guided-generation": [
        ("SC", (), 2),
        ("SC", ("style_recognisable",), 0),      # clearly another style
        ("SC", ("content_matches",), 0),         # content wrong, style perfect
        ("SC", ("style_close",), 0.5),           # style only in part
        ("SC", ("style_close", "content_complete"), 0.5),
        ("SC", ("content_complete",), 1),        # minor objects missing
        ("PR", (), 2),
        ("PR", ("no_obvious_flaws",), 0),
        ("PR", ("no_minor_flaws",), 0.5),
        ("PR", ("convincing",), 1),
    ],
}


@pytest.mark.parametrize(("rubric_id", "criterion", "unticked", "expected"), [
    pytest.param(rubric_id, criterion, unticked, expected,
                 id=f"{rubric_id}-{criterion}-{'+'.join(unticked) or 'all-ticked'}")
    for rubric_id, cases in LEVEL_CASES.items()
    for criterion, unticked, expected in cases])
def test_task_checklists_give_the_level_their_descriptions_name(
        rubric_id, criterion, unticked, expected):
    checklist_ = load_rubric_by_id(rubric_id).checklist(criterion)
    assert set(unticked) <= set(checklist_.ids)
    ticks = {c: c not in unticked for c in checklist_.ids}
    assert checklist_.derive(ticks) == expected


def _task_rubric_ids() -> list[str]:
    # imagenhub-general (the rules for any task) and imagenhub-released (the 0-1 scale of
    # the released ratings) are not the rubric of one task.
    return sorted(p.stem for p in DEFAULT_RUBRICS_DIR.glob("imagenhub-*.yaml")
                  if p.stem not in ("imagenhub-general", "imagenhub-released"))


def test_every_imagenhub_task_rubric_has_checklists_reaching_every_level():
    ids = _task_rubric_ids()
    assert ids == sorted(TASK_RUBRICS.values())
    for rubric_id in ids:
        rubric = load_rubric_by_id(rubric_id)
        for criterion in ("SC", "PR"):
            checklist_ = rubric.checklist(criterion)
            assert checklist_ is not None, (rubric_id, criterion)
            n = len(checklist_.ids)
            derived = {bits: checklist_.derive(dict(zip(checklist_.ids, bits, strict=True)))
                       for bits in product((False, True), repeat=n)}
            assert set(derived.values()) == {0, 0.5, 1, 2}, (rubric_id, criterion)
            assert derived[(False,) * n] == 0 and derived[(True,) * n] == 2
            # A ladder: ticking one more condition never lowers the value.
            for bits, value in derived.items():
                for i in range(len(bits)):
                    more = (*bits[:i], True, *bits[i + 1:])
                    assert derived[more] >= value, (rubric_id, criterion, bits, i)


@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: d["checklist"].update(XX=d["checklist"]["SC"]),
     "checklist.XX: no criterion 'XX' in this rubric (criteria: ['SC', 'PR'])"),
    (lambda d: d["checklist"]["SC"]["conditions"].append({"id": "subject", "text": "again"}),
     "checklist.SC.conditions[2].id: duplicate condition id 'subject' "
     "(also checklist.SC.conditions[0])"),
    (lambda d: d["checklist"]["SC"]["derive"].pop(),
     "checklist.SC.derive: no rule gives a value in 1 of 4 cases (e.g. ticked: nothing); "
     "end with a rule without when"),
    (lambda d: d["checklist"]["SC"]["derive"].insert(
        0, {"value": 1, "when": {"all_ticked": ["subject"], "none_ticked": ["subject"]}}),
     "checklist.SC.derive[0]: can never apply: its when is contradictory or earlier rules "
     "take every case it covers"),
    (lambda d: d["checklist"]["SC"]["derive"].append({"value": 1}),
     "checklist.SC.derive[3]: can never apply: its when is contradictory or earlier rules "
     "take every case it covers"),
    (lambda d: d["checklist"]["SC"]["derive"][0]["when"].update(all_ticked=["subjekt"]),
     "checklist.SC.derive[0].when.all_ticked[0]: 'subjekt' is not a condition of this "
     "criterion (conditions: ['subject', 'attributes'])"),
    (lambda d: d["checklist"]["SC"]["derive"][2].update(value=2),
     "checklist.SC.derive[2].value: 2 is not in scale [0, 0.5, 1]"),
    (lambda d: d["checklist"]["SC"]["derive"][0]["when"].update(most_ticked=["subject"]),
     "checklist.SC.derive[0].when.most_ticked: unknown clause (allowed: all_ticked, "
     "any_ticked, none_ticked, not_all_ticked)"),
    (lambda d: d["checklist"]["SC"]["conditions"][0].update(key="q"),
     "checklist.SC.conditions[0].key: 'q' is already bound to criteria[1].keys (default 'q')"),
    (lambda d: d["checklist"]["SC"]["conditions"][1].update(key="s"),
     "checklist.SC.conditions[1].key: 's' is reserved by the app (Enter, S, F, U, Z)"),
    (lambda d: d["checklist"]["SC"].update(conditions=[]),
     "checklist.SC.conditions: must be a non-empty list of conditions, got []"),
    (lambda d: d.update(checklist=[1]),
     "checklist: must be a mapping of criterion key to its conditions and rules, got [1]"),
])
def test_a_bad_checklist_is_refused_naming_the_field(tmp_path, change, expected):
    assert _problems(tmp_path, change) == [expected]


def test_the_error_names_the_rubric_file(tmp_path):
    data = copy.deepcopy(BASE)
    data["checklist"]["SC"]["derive"].pop()
    with pytest.raises(RubricError, match=r"x\.yaml: checklist\.SC\.derive: no rule"):
        _load(tmp_path, data)


def test_more_conditions_than_default_keys_need_explicit_keys(tmp_path):
    data = copy.deepcopy(BASE)
    data["checklist"]["SC"]["conditions"] = [{"id": f"c{i}", "text": "t"} for i in range(11)]
    data["checklist"]["SC"]["derive"] = [{"value": 0}]
    problems = _problems(tmp_path, lambda d: d.update(checklist=data["checklist"]))
    assert problems == ["checklist.SC.conditions[10].key: needs a key: the 10 default keys "
                        "(1234567890) are taken by earlier conditions"]


# ---------------------------------------------------------------- service


@pytest.fixture
def editing(db, tmp_path):
    """A study rated on the text-guided editing rubric (SC and PR checklists)."""
    manifest = make_folder_study(tmp_path / "ed", prompts=2, models=("m1",), k=1,
                                 extra="rubric: imagenhub-text-guided-editing\n"
                                       "checklist: true\n")
    from concord.services import studies
    studies.import_manifest(db, manifest)
    return db, "ed", invited(db, "ed")


ALL_SC = {"instruction_done": True, "same_background": True, "natural_complete": True,
          "no_extra_edits": False}
ALL_PR = {"no_large_flaws": True, "key_objects_clean": True}


def _submit(db, study, rid, image_id, values, ticks, reasons=None, **kw):
    return rating.submit(db, study, rid, image_id, values, submission=kw.pop("sub", None)
                         or new_submission(), ticks=ticks, reasons=reasons, **kw)


def test_ticks_derive_and_store_the_values(editing):
    db, study, rid = editing
    item = rating.next_item(db, study, rid)
    assert [c.criterion for c in item.rubric.checklists] == ["SC", "PR"]
    _submit(db, study, rid, item.image_id, {"SC": None, "PR": None}, {**ALL_SC, **ALL_PR},
            sub=item.submission)
    rows = checklist.ticks_frame(db, item_study_id(db, study))
    assert set(rows.criterion) == {"SC", "PR"}
    sc = rows[rows.criterion == "SC"]
    assert list(sc.condition) == ["instruction_done", "same_background", "natural_complete",
                                  "no_extra_edits"]
    assert list(sc.ticked) == [1, 1, 1, 0]
    assert set(sc.derived) == {1.0} and set(sc.final) == {1.0}
    assert set(rows[rows.criterion == "PR"].final) == {1.0}  # minor objects not clean
    from concord.store.ratings import current_values
    assert current_values(db, item.image_id, rid) == {"SC": 1.0, "PR": 1.0}


def item_study_id(db, name):
    from concord.store import studies as study_store
    return study_store.get_study(db, name).id


def test_an_override_needs_a_reason_and_keeps_both_values(editing):
    db, study, rid = editing
    item = rating.next_item(db, study, rid)
    with pytest.raises(RatingError, match="SC: the checklist gives 1; to choose 2 instead, "
                                          "give a reason"):
        _submit(db, study, rid, item.image_id, {"SC": 2, "PR": None}, {**ALL_SC, **ALL_PR},
                reasons={"SC": "  "})
    assert checklist.ticks_frame(db, item_study_id(db, study)).empty
    _submit(db, study, rid, item.image_id, {"SC": 2, "PR": 1}, {**ALL_SC, **ALL_PR},
            reasons={"SC": "the extra edit is harmless", "PR": "ignored: no override"})
    rows = checklist.ticks_frame(db, item_study_id(db, study))
    by = rows.drop_duplicates("criterion").set_index("criterion")
    assert by.loc["SC", ["derived", "final", "reason"]].tolist() == [
        1.0, 2.0, "the extra edit is harmless"]
    assert pd.isna(by.loc["PR", "reason"])


def test_unknown_conditions_are_refused(editing):
    db, study, rid = editing
    item = rating.next_item(db, study, rid)
    with pytest.raises(RatingError, match=r"unknown condition\(s\) \['subject'\]"):
        _submit(db, study, rid, item.image_id, {"SC": None, "PR": None}, {"subject": True})


def test_undo_and_edit_show_the_earlier_ticks(editing):
    db, study, rid = editing
    item = rating.next_item(db, study, rid)
    _submit(db, study, rid, item.image_id, {"SC": None, "PR": None}, {**ALL_SC, **ALL_PR})
    assert rating.undo_last(db, study, rid) == item.image_id
    sid = item_study_id(db, study)
    assert checklist.ticks_frame(db, sid).empty  # undone: no current ticks
    again = rating.next_item(db, study, rid)
    assert again.image_id == item.image_id
    assert dict(again.answers["SC"].ticks) == ALL_SC
    assert again.answers["SC"].derived == 1
    # The rater changes one tick and re-submits; then edits with an override.
    _submit(db, study, rid, again.image_id, {"SC": None, "PR": None},
            {**ALL_SC, "no_extra_edits": True, **ALL_PR})
    opened = rating.open_item(db, study, rid, item.image_id)
    assert opened.answers["SC"].final == 2 and opened.answers["SC"].ticks[-1] == (
        "no_extra_edits", True)
    _submit(db, study, rid, item.image_id, {"SC": 0.5, "PR": None},
            {**ALL_SC, "no_extra_edits": True, **ALL_PR}, reasons={"SC": "hat looks odd"},
            edit=True)
    rows = checklist.ticks_frame(db, sid)
    assert rows.submission.nunique() == 1 and len(rows) == 8
    assert set(rows[rows.criterion == "SC"].reason) == {"hat looks odd"}
    assert rating.open_item(db, study, rid, item.image_id).answers["SC"].reason == "hat looks odd"


def test_a_replayed_submission_stores_its_ticks_once(editing):
    db, study, rid = editing
    item = rating.next_item(db, study, rid)
    for _ in range(2):
        _submit(db, study, rid, item.image_id, {"SC": None, "PR": None}, ALL_SC,
                sub=item.submission)
    assert len(checklist.ticks_frame(db, item_study_id(db, study))) == 8
    assert checklist_store.last_answers(db, item.image_id, rid)["PR"].final == 0


def test_a_study_without_checklist_true_rates_directly(db, tmp_path):
    from concord.services import studies
    manifest = make_folder_study(tmp_path / "pl", prompts=1, models=("m1",), k=1,
                                 extra="rubric: imagenhub-text-guided-editing\n")
    studies.import_manifest(db, manifest)
    rid = invited(db, "pl")
    item = rating.next_item(db, "pl", rid)
    assert item.rubric.checklists == () and item.answers == {}
    assert item.rubric.criterion("SC").levels[0].key == "1"
    _submit(db, "pl", rid, item.image_id, {"SC": 2, "PR": 2}, {"anything": True})
    assert checklist.ticks_frame(db, item_study_id(db, "pl")).empty


def test_the_manifest_checklist_key_must_be_a_boolean(db, tmp_path):
    from concord.errors import InputError
    from concord.services import studies
    manifest = make_folder_study(tmp_path / "bad", prompts=1, models=("m1",),
                                 extra="checklist: yes please\n")
    with pytest.raises(InputError, match=r"checklist.*expected true or false, got 'yes please'"):
        studies.import_manifest(db, manifest)


def test_without_ticks_the_values_are_taken_as_given(editing):
    db, study, rid = editing
    item = rating.next_item(db, study, rid)
    _submit(db, study, rid, item.image_id, {"SC": 2, "PR": 2}, None)
    assert checklist.ticks_frame(db, item_study_id(db, study)).empty


# ---------------------------------------------------------------- export


def test_export_checklist_writes_every_tick_and_the_override_reason(editing, tmp_path):
    import csv
    import io

    from concord import export
    from concord.cli import main
    db, study, rid = editing
    item = rating.next_item(db, study, rid)
    _submit(db, study, rid, item.image_id, {"SC": 0, "PR": None}, {**ALL_SC, **ALL_PR},
            reasons={"SC": "=cmd| a formula-looking reason"})
    target = tmp_path / "ticks.csv"
    path = target_of(db)
    assert main(["--db", path, "export", "--study", study, "--format", "checklist",
                 "-o", str(target)]) == 0
    rows = list(csv.DictReader(io.StringIO(target.read_text(encoding="utf-8"))))
    assert list(rows[0]) == export.CHECKLIST_COLUMNS
    assert len(rows) == 8
    sc = [r for r in rows if r["criterion"] == "SC"]
    assert [(r["condition"], r["ticked"]) for r in sc] == [
        ("instruction_done", "1"), ("same_background", "1"), ("natural_complete", "1"),
        ("no_extra_edits", "0")]
    assert {(r["derived"], r["final"], r["reason"]) for r in sc} == {
        ("1", "0", "'=cmd| a formula-looking reason")}  # neutralised for spreadsheets
    assert {r["reason"] for r in rows if r["criterion"] == "PR"} == {""}
    # A study without checklist answers exports the header only.
    from concord.services.exports import labels
    rating.undo_last(db, study, rid)
    empty = labels.export_bytes(db, study, "checklist")
    assert empty.splitlines()[0].decode().split(",") == export.CHECKLIST_COLUMNS



# ---------------------------------------------------------------- statistics


def test_stats_json_reports_agreement_per_condition(db, tmp_path, capsys):
    import json

    import krippendorff
    import numpy as np

    from concord.cli import main
    from concord.services import studies
    manifest = make_folder_study(tmp_path / "ag", prompts=2, models=("m1", "m2"), k=2,
                                 extra="rubric: imagenhub-text-guided-editing\n"
                                       "checklist: true\n")
    studies.import_manifest(db, manifest)
    raters = [invited(db, "ag", name) for name in ("ann", "ben")]
    seen: dict[int, dict[int, int]] = {}
    for n, rid in enumerate(raters):
        while (item := rating.next_item(db, "ag", rid)) is not None:
            # ann ticks same_background everywhere, ben only on even image ids
            tick = n == 0 or item.image_id % 2 == 0
            seen.setdefault(rid, {})[item.image_id] = int(tick)
            _submit(db, "ag", rid, item.image_id, {"SC": None, "PR": None},
                    {"instruction_done": True, "same_background": tick})
    path = target_of(db)
    assert main(["--db", path, "stats", "--study", "ag", "--json", "--n-boot", "10",
                 "--n-perm", "10"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["condition"]: r for r in doc["checklist"]["conditions"]}
    assert len(rows) == 8 and rows["instruction_done"]["percent_agreement"] == 1.0
    images = sorted(seen[raters[0]])
    matrix = np.array([[seen[rid][i] for i in images] for rid in raters], float)
    bg = rows["same_background"]
    assert bg["alpha_nominal"] == pytest.approx(krippendorff.alpha(
        reliability_data=matrix, level_of_measurement="nominal"), abs=1e-12)
    assert bg["percent_agreement"] == pytest.approx(float((matrix[0] == matrix[1]).mean()))
    assert rows["no_extra_edits"]["alpha_nominal"] is None  # nobody ticked it: undefined
    assert sorted(doc["checklist"]["overrides"], key=lambda r: r["criterion"]) == [
        {"criterion": "PR", "n_ratings": 8, "n_overrides": 0, "share_overridden": 0.0},
        {"criterion": "SC", "n_ratings": 8, "n_overrides": 0, "share_overridden": 0.0}]


def test_deleting_the_study_removes_its_ticks(editing):
    from concord.services import studies
    db, study, rid = editing
    item = rating.next_item(db, study, rid)
    _submit(db, study, rid, item.image_id, {"SC": None, "PR": None}, ALL_SC)
    studies.delete(db, study)
    assert checklist_store.last_answers(db, item.image_id, rid) == {}
    assert [db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("rating_checklists", "rating_ticks")] == [0, 0]


def test_a_rubric_file_with_an_alias_bomb_is_refused_fast(tmp_path):
    """Billion laughs in a rubric's guide: refused with the file named, not expanded."""
    bomb = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        bomb.append(f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9) + "]")
    path = tmp_path / "bomb.yaml"
    path.write_text("id: bomb\n" + "\n".join(bomb) + "\nguide: *i\n")
    with pytest.raises(RubricError, match=r"bomb\.yaml"):
        load_rubric(path)

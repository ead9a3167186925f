"""A study's rubric(s) as the rating screen asks for them; inline scales; manifest
``rubrics:`` (one rubric per dimension)."""

from __future__ import annotations

import pytest

from concord.errors import RatingError
from concord.rubrics.inline import (
    InlineScaleError,
    describe,
    from_settings,
    inline_rubric,
    parse_criteria,
    to_settings,
)
from concord.services import rubric_choice
from concord.store.studies import Study
from tests.foundation_helpers import import_fails, make_folder_study, problem_text


def _study(rubric=None, **settings) -> Study:
    return Study(id=1, name="s", protocol="score", rubric=rubric, root=None, settings=settings)


pytestmark = pytest.mark.both_engines


def test_inline_scales_round_trip_through_settings():
    scale = parse_criteria(["likert=1..5", " q = 1, 0, 0.5 "])
    assert scale == (("likert", (1.0, 2.0, 3.0, 4.0, 5.0)), ("q", (0.0, 0.5, 1.0)))
    assert describe(scale) == "likert=1..5 q=0,0.5,1"
    assert to_settings(scale) == [{"key": "likert", "scale": [1, 2, 3, 4, 5]},
                                  {"key": "q", "scale": [0, 0.5, 1]}]
    assert from_settings(to_settings(scale)) == scale
    assert parse_criteria(["bipolar=-3..3"])[0][1] == (-3, -2, -1, 0, 1, 2, 3)


def test_an_inline_rubric_has_levels_and_keys_like_a_file():
    rubric = inline_rubric(parse_criteria(["a=1..10", "b=0,1", "c=1..3"]))
    assert rubric.id == "inline" and rubric.combine is None
    assert [lv.key for lv in rubric.criterion("a").levels] == list("1234567890")
    assert [lv.key for lv in rubric.criterion("b").levels] == ["q", "w"]
    assert [lv.key for lv in rubric.criterion("c").levels] == [None] * 3  # no default row
    assert rubric.criterion("b").level(1).label == "1"
    assert rubric.scale == ()  # the criteria differ


@pytest.mark.parametrize("specs", [[], ["a=1..5", "a=1..3"], ["a=1..5e3"], ["a=nan,1"]])
def test_bad_inline_definitions(specs):
    with pytest.raises(InlineScaleError):
        parse_criteria(specs)


def test_rubric_for_file_inline_and_per_dimension():
    assert rubric_choice.rubric_for(_study("likert-7")).id == "likert-7"
    inline = _study(criteria=[{"key": "q", "scale": [0, 1]}])
    assert rubric_choice.rubric_for(inline, "any").criterion("q").values == (0, 1)
    per = _study("imagenhub-general", rubrics={"Text-Guided_IE": "imagenhub-text-guided-editing"})
    assert rubric_choice.rubric_for(per, "Text-Guided_IE").id == "imagenhub-text-guided-editing"
    assert rubric_choice.rubric_for(per, None).id == "imagenhub-general"
    assert rubric_choice.rubric_for(per, "Mask-Guided_IE").id == "imagenhub-general"
    with pytest.raises(RatingError, match="has no rubric"):
        rubric_choice.rubric_for(_study())


def test_manifest_rubrics_are_checked(db, tmp_path):
    extra = "rubrics:\n  count: likert-5\n  colour: nope\n  shape: tiif-ranking\n"
    err = import_fails(db, make_folder_study(tmp_path / "s", prompts=2, extra=extra))
    text = problem_text(err)
    assert "field 'rubrics.colour': unknown rubric 'nope'" in text
    assert "field 'rubrics.colour': no prompt has the dimension 'colour'" in text
    assert "field 'rubrics.shape': 'tiif-ranking' is a ranking rubric" in text
    assert "rubrics.count" not in text
    bad = import_fails(db, make_folder_study(tmp_path / "t", prompts=1,
                                             extra="rubrics: [likert-5]\n"))
    assert "expected a mapping of dimension to rubric id" in problem_text(bad)

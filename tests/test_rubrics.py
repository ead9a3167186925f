"""Tests for concord.rubrics and the shipped rubrics/*.yaml files."""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path

import pytest
import yaml

from concord.rubrics import (
    DEFAULT_RUBRICS_DIR,
    RubricError,
    RubricProblem,
    list_rubrics,
    load_rubric,
    load_rubric_by_id,
    validate_rubrics,
)
from tests.helpers import ROOT, SHARED, SHARED_REASON

GUIDE_SEED = "seeds/002_29129736be9f4650.txt"


IMAGENHUB_TASKS = (
    "imagenhub-text-guided-editing",
    "imagenhub-mask-guided-editing",
    "imagenhub-subject-driven-editing",
    "imagenhub-multi-subject-generation",
    "imagenhub-control-guided-generation",
    "imagenhub-style-guided-generation",
    "imagenhub-subject-driven-generation",
)
GENERIC_SCALES = {"likert-5": (1, 2, 3, 4, 5), "likert-7": (1, 2, 3, 4, 5, 6, 7),
                  "binary": (0, 1)}
EXPECTED_IDS = {
    *IMAGENHUB_TASKS,
    "imagenhub-general",
    "imagenhub-text-to-image",
    "imagenhub-released",
    "tiif-ranking",
    *GENERIC_SCALES,
}


def _levels(values, prefix):
    return [
        {"value": v, "label": f"{prefix} {v}", "description": f"{prefix} level {v}."}
        for v in values
    ]


BASE = {
    "id": "x",
    "title": "A test rubric",
    "task": "text-to-image",
    "source": {"title": "Made up for the tests"},
    "scale": [0, 0.5, 1, 2],
    "criteria": [
        {
            "key": "SC",
            "name": "Semantic",
            "definition": "Follows?",
            "levels": _levels([0, 0.5, 1, 2], "sc"),
        },
        {
            "key": "PR",
            "name": "Realism",
            "definition": "Real?",
            "levels": _levels([0, 0.5, 1, 2], "pr"),
        },
    ],
    "combine": {"method": "geometric_mean", "criteria": ["SC", "PR"]},
}

RANK_BASE = {
    "id": "x",
    "title": "A ranking",
    "protocol": "rank",
    "task": "text-to-image",
    "source": {"title": "Made up"},
    "criteria": [{"key": "overall", "name": "Overall", "definition": "Which is best?"}],
}


def _write(folder: Path, data, name: str = "x") -> Path:
    path = folder / f"{name}.yaml"
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- shipped rubrics


def test_shipped_rubrics_validate_without_problems():
    assert [str(p) for p in validate_rubrics()] == []


def test_shipped_rubric_ids_are_the_expected_ones():
    assert set(list_rubrics()) == EXPECTED_IDS
    assert DEFAULT_RUBRICS_DIR == ROOT / "rubrics"


@pytest.mark.parametrize("rubric_id", sorted(EXPECTED_IDS))
def test_shipped_rubric_loads_and_cites_its_source(rubric_id):
    rubric = load_rubric_by_id(rubric_id)
    assert rubric.id == rubric_id
    assert rubric.source["title"]
    if rubric_id in GENERIC_SCALES:  # our own generic scales say where they come from
        assert rubric.source["notes"]
    else:  # the others come from a publication
        assert rubric.source["url"].startswith("https://")
    if rubric_id.startswith("imagenhub-"):
        assert rubric.source["arxiv"] == "2310.01596"
        assert "github.com/TIGER-AI-Lab/ImagenHub" in rubric.source["url"]
        assert rubric.combine is not None
        assert rubric.combine.method == "geometric_mean"


@pytest.mark.parametrize(
    "rubric_id", [*IMAGENHUB_TASKS, "imagenhub-general", "imagenhub-text-to-image"]
)
def test_imagenhub_guide_rubrics_use_the_four_level_scale(rubric_id):
    rubric = load_rubric_by_id(rubric_id)
    assert rubric.scale == (0, 0.5, 1, 2)
    assert [c.key for c in rubric.criteria] == ["SC", "PR"]
    for criterion in rubric.criteria:
        assert criterion.values == (0, 0.5, 1, 2)
    if rubric_id.endswith("editing"):
        assert "source image" in rubric.inputs


@pytest.mark.parametrize(("rubric_id", "scale"), sorted(GENERIC_SCALES.items()))
def test_generic_scales_have_one_criterion_and_no_overall(rubric_id, scale):
    rubric = load_rubric_by_id(rubric_id)
    [criterion] = rubric.criteria
    assert criterion.values == scale
    assert rubric.combine is None  # nothing to combine: no derived O
    assert rubric.overall({criterion.key: scale[0]}) is None
    assert all(level.key is not None for level in criterion.levels)  # keyboard-ready
    assert rubric.variant_of is None


def test_likert_keys_press_the_value_and_binary_uses_0_and_1():
    assert [lv.key for lv in load_rubric_by_id("likert-7").criteria[0].levels] == list("1234567")
    assert [lv.key for lv in load_rubric_by_id("binary").criteria[0].levels] == ["0", "1"]


def test_imagenhub_rubrics_accept_pq_for_pr():
    for rubric_id in (*IMAGENHUB_TASKS, "imagenhub-general", "imagenhub-text-to-image",
                      "imagenhub-released"):
        rubric = load_rubric_by_id(rubric_id)
        assert rubric.resolve("PQ").key == "PR", rubric_id
        assert rubric.resolve("PR").key == "PR"
        assert rubric.resolve("SC").key == "SC"
        assert rubric.resolve("pq") is None  # names are exact


def test_task_rubrics_are_variants_of_the_general_rules():
    for rubric_id in (*IMAGENHUB_TASKS, "imagenhub-text-to-image"):
        assert load_rubric_by_id(rubric_id).variant_of == "imagenhub-general"
    assert load_rubric_by_id("imagenhub-released").variant_of is None


def test_guide_worked_cases_are_in_the_editing_guide():
    guide = load_rubric_by_id("imagenhub-text-guided-editing").guide
    assert "background is completely different → SC 0" in guide
    assert "same as the input → SC 0" in guide


def test_style_guided_pr2_is_flagged_as_written_by_us():
    rubric = load_rubric_by_id("imagenhub-style-guided-generation")
    assert "blank" in rubric.notes
    assert "general PR=2" in rubric.criterion("PR").level(2).description


def test_released_rubric_uses_the_three_level_scale():
    rubric = load_rubric_by_id("imagenhub-released")
    assert rubric.scale == (0, 0.5, 1)
    assert {c.key: c.values for c in rubric.criteria} == {"SC": (0, 0.5, 1), "PR": (0, 0.5, 1)}


def test_tiif_ranking_is_a_rank_rubric_without_levels():
    rubric = load_rubric_by_id("tiif-ranking")
    assert rubric.is_ranking
    assert rubric.scale == ()
    assert rubric.combine is None
    assert [c.key for c in rubric.criteria] == ["prompt_following", "visual_quality"]
    assert all(c.levels == () for c in rubric.criteria)
    assert rubric.level_for_key("1") is None


def test_default_keyboard_keys_and_level_for_key():
    rubric = load_rubric_by_id("imagenhub-general")
    assert [level.key for level in rubric.criterion("SC").levels] == ["1", "2", "3", "4"]
    assert [level.key for level in rubric.criterion("PR").levels] == ["q", "w", "e", "r"]
    criterion, level = rubric.level_for_key("3")
    assert (criterion.key, level.value) == ("SC", 1)
    criterion, level = rubric.level_for_key("R")  # case-insensitive
    assert (criterion.key, level.value) == ("PR", 2)
    assert rubric.level_for_key("s") is None


def test_overall_is_the_geometric_mean():
    rubric = load_rubric_by_id("imagenhub-general")
    assert rubric.overall({"SC": 2, "PR": 0.5}) == pytest.approx(1.0)
    assert rubric.overall({"SC": 0, "PR": 2}) == 0
    assert load_rubric_by_id("imagenhub-released").overall({"SC": 0.5, "PR": 1}) == (
        pytest.approx(math.sqrt(0.5))
    )
    with pytest.raises(KeyError):
        rubric.overall({"SC": 1})


def test_ui_helpers_return_values_and_descriptions_in_scale_order():
    criterion = load_rubric_by_id("imagenhub-text-to-image").criterion("SC")
    descriptions = criterion.descriptions()
    assert list(descriptions) == [0, 0.5, 1, 2]
    assert descriptions[2] == criterion.level(2).description
    with pytest.raises(KeyError, match="3"):
        criterion.level(3)
    with pytest.raises(KeyError, match="'XX'"):
        load_rubric_by_id("imagenhub-text-to-image").criterion("XX")


def _guide_text() -> str | None:
    path = SHARED / GUIDE_SEED
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


@pytest.mark.shared
def test_level_texts_are_not_copied_from_the_guide():
    guide = _guide_text()
    if guide is None:
        pytest.skip(f"{SHARED_REASON}: ImagenHub guide text {SHARED / GUIDE_SEED}")
    words = _words(guide)
    runs = {tuple(words[i : i + 8]) for i in range(len(words) - 7)}
    copied = []
    for rubric_id in list_rubrics():
        rubric = load_rubric_by_id(rubric_id)
        texts = [rubric.guide] + [c.definition for c in rubric.criteria]
        texts += [lv.description for c in rubric.criteria for lv in c.levels]
        for text in texts:
            own = _words(text)
            copied += [
                (rubric_id, " ".join(own[i : i + 8]))
                for i in range(len(own) - 7)
                if tuple(own[i : i + 8]) in runs
            ]
    assert copied == []


# ---------------------------------------------------------------- scale is data


def test_a_five_point_scale_loads_from_data(tmp_path):
    data = copy.deepcopy(BASE)
    data["scale"] = [1, 2, 3, 4, 5]
    for criterion in data["criteria"]:
        criterion["levels"] = _levels([5, 4, 3, 2, 1], criterion["key"])  # any order
    data["combine"]["method"] = "arithmetic_mean"
    rubric = load_rubric(_write(tmp_path, data))
    assert rubric.scale == (1, 2, 3, 4, 5)
    assert rubric.criterion("SC").values == (1, 2, 3, 4, 5)
    assert rubric.criterion("PR").level(3).description == "PR level 3."
    assert [lv.key for lv in rubric.criterion("PR").levels] == ["q", "w", "e", "r", "t"]
    criterion, level = rubric.level_for_key("5")
    assert (criterion.key, level.value, level.label) == ("SC", 5, "SC 5")
    assert rubric.overall({"SC": 5, "PR": 2}) == pytest.approx(3.5)


def test_explicit_keys_and_a_third_criterion_without_default_keys(tmp_path):
    data = copy.deepcopy(BASE)
    data["criteria"][0]["keys"] = ["a", "b", "c", "d"]
    data["criteria"].append(
        {
            "key": "AE",
            "name": "Aesthetics",
            "definition": "Pretty?",
            "levels": _levels([0, 0.5, 1, 2], "ae"),
        }
    )
    rubric = load_rubric(_write(tmp_path, data))
    assert rubric.level_for_key("B")[1].value == 0.5
    assert all(level.key is None for level in rubric.criterion("AE").levels)


# ---------------------------------------------------------------- broken rubrics


def _edit(path: str, value, base=BASE):
    """Return a copy of ``base`` with the value at a dotted/indexed ``path`` replaced."""
    data = copy.deepcopy(base)
    *parents, last = re.findall(r"[^.\[\]]+", path)
    node = data
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    if value is _DELETE:
        del node[int(last) if last.isdigit() else last]
    elif last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return data


_DELETE = object()

BROKEN = [
    # (case id, rubric data or YAML text, expected key path, expected message part)
    ("yaml-syntax", "id: x\ntitle: [unclosed\n", "", "invalid YAML"),
    ("duplicate-yaml-key", "id: x\nid: x\n", "", "'id' twice"),
    ("root-not-mapping", "- a\n- b\n", "", "root must be a mapping, got list"),
    ("empty-file", "", "", "empty file"),
    ("missing-title", _edit("title", _DELETE), "title", "missing required key"),
    ("unknown-top-key", _edit("colour", "red"), "colour", "unknown"),
    ("id-not-stem", _edit("id", "other"), "id", "does not match the file name 'x'"),
    ("bad-protocol", _edit("protocol", "vote"), "protocol", "not one of"),
    ("source-no-title", _edit("source", {"url": "https://a"}), "source.title", "missing"),
    ("empty-scale", _edit("scale", []), "scale", "non-empty list"),
    ("scale-not-number", _edit("scale", ["low", 0.5, 1, 2]), "scale[0]", "is not a number"),
    ("scale-bool", _edit("scale", [0, 0.5, True, 2]), "scale[2]", "is not a number"),
    ("scale-not-increasing", _edit("scale", [0, 1, 0.5, 2]), "scale", "not strictly increasing"),
    ("scale-repeated", _edit("scale", [0, 1, 1, 2]), "scale", "not strictly increasing"),
    ("empty-criteria", _edit("criteria", []), "criteria", "non-empty list"),
    (
        "duplicate-criterion",
        _edit("criteria.1.key", "SC"),
        "criteria[1].key",
        "duplicate criterion key 'SC'",
    ),
    (
        "level-not-in-scale",
        _edit("criteria.1.levels.2.value", 3),
        "criteria[1].levels[2].value",
        "3 is not in scale [0, 0.5, 1, 2]",
    ),
    (
        "level-missing",
        _edit("criteria.0.levels.3", _DELETE),
        "criteria[0].levels",
        "no level for scale value(s) [2]",
    ),
    (
        "level-twice",
        _edit("criteria.0.levels.1.value", 0),
        "criteria[0].levels[1].value",
        "has two levels",
    ),
    (
        "empty-description",
        _edit("criteria.0.levels.0.description", " "),
        "criteria[0].levels[0].description",
        "non-empty string",
    ),
    (
        "missing-label",
        _edit("criteria.1.levels.0.label", _DELETE),
        "criteria[1].levels[0].label",
        "missing required key",
    ),
    (
        "unknown-level-key",
        _edit("criteria.0.levels.0.hint", "x"),
        "criteria[0].levels[0].hint",
        "unknown",
    ),
    ("no-levels", _edit("criteria.0.levels", _DELETE), "criteria[0].levels", "missing"),
    (
        "duplicate-keyboard-key",
        _edit("criteria.0.keys", ["1", "2", "2", "3"]),
        "criteria[0].keys[2]",
        "already bound to criteria[0].keys[1]",
    ),
    (
        "keyboard-key-across-criteria",
        _edit("criteria.1.keys", ["a", "b", "C", "1"]),
        "criteria[1].keys[3]",
        "already bound to criteria[0].keys (default '1')",
    ),
    (
        "keyboard-key-case-clash",
        _edit("criteria.1.keys", ["a", "A", "b", "c"]),
        "criteria[1].keys[1]",
        "already bound",
    ),
    (
        "reserved-key",
        _edit("criteria.0.keys", ["1", "2", "s", "4"]),
        "criteria[0].keys[2]",
        "reserved",
    ),
    (
        "reserved-key-upper",
        _edit("criteria.1.keys", ["Z", "x", "c", "v"]),
        "criteria[1].keys[0]",
        "reserved",
    ),
    (
        "reserved-enter",
        _edit("criteria.1.keys", ["enter", "x", "c", "v"]),
        "criteria[1].keys[0]",
        "reserved",
    ),
    (
        "wrong-key-count",
        _edit("criteria.0.keys", ["1", "2"]),
        "criteria[0].keys",
        "one key per level, got 2",
    ),
    ("combine-bad-method", _edit("combine.method", "median"), "combine.method", "not one of"),
    (
        "combine-unknown-criterion",
        _edit("combine.criteria", ["SC", "AE"]),
        "combine.criteria",
        "must list criterion keys",
    ),
    (
        "rank-with-levels",
        _edit("criteria.0.levels", [], RANK_BASE),
        "criteria[0].levels",
        "not allowed when protocol is rank",
    ),
    ("rank-with-scale", _edit("scale", [1, 2], RANK_BASE), "scale", "not allowed"),
    (
        "alias-not-a-list",
        _edit("criteria.1.aliases", "PQ"),
        "criteria[1].aliases",
        "non-empty list of names",
    ),
    (
        "alias-is-a-key",
        _edit("criteria.1.aliases", ["PQ", "SC"]),
        "criteria[1].aliases[1]",
        "'SC' is the key of criteria[0]",
    ),
    (
        "alias-twice",
        _edit("criteria.1.aliases", ["PQ", "PQ"]),
        "criteria[1].aliases[1]",
        "'PQ' is already an alias (criteria[1].aliases[0])",
    ),
    (
        "alias-on-two-criteria",
        _edit("criteria.0.aliases", ["Q"], _edit("criteria.1.aliases", ["Q"])),
        "criteria[1].aliases[0]",
        "'Q' is already an alias (criteria[0].aliases[0])",
    ),
    (
        "alias-blank",
        _edit("criteria.1.aliases", [" PQ"]),
        "criteria[1].aliases[0]",
        "without surrounding spaces",
    ),
    ("variant-of-itself", _edit("variant_of", "x"), "variant_of", "variant of itself"),
    ("variant-of-empty", _edit("variant_of", ""), "variant_of", "non-empty string"),
    (
        "rank-with-aliases",
        _edit("criteria.0.aliases", ["best"], RANK_BASE),
        "criteria[0].aliases",
        "unknown",
    ),
    (
        "rank-missing-definition",
        _edit("criteria.0.definition", _DELETE, RANK_BASE),
        "criteria[0].definition",
        "missing",
    ),
]


@pytest.mark.parametrize(
    ("data", "key", "message"), [case[1:] for case in BROKEN], ids=[case[0] for case in BROKEN]
)
def test_broken_rubric_is_reported_with_file_and_key(tmp_path, data, key, message):
    path = _write(tmp_path, data)
    problems = validate_rubrics(tmp_path)
    matching = [p for p in problems if p.key == key and message in p.message]
    assert matching, [str(p) for p in problems]
    line = str(matching[0])
    assert str(path) in line or "x.yaml" in line
    assert line.endswith(f"{key}: {matching[0].message}" if key else matching[0].message)
    assert "\n" not in line
    with pytest.raises(RubricError) as info:
        load_rubric(path)
    assert line in str(info.value)


def test_problem_line_format():
    problem = RubricProblem(
        Path("/tmp/r/x.yaml"), "criteria[1].levels[2].value", "3 is not in scale [0, 0.5, 1, 2]"
    )
    assert str(problem) == (
        "/tmp/r/x.yaml: criteria[1].levels[2].value: 3 is not in scale [0, 0.5, 1, 2]"
    )


def test_problem_path_is_shown_relative_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    problem = RubricProblem(tmp_path / "rubrics" / "x.yaml", "id", "wrong")
    assert str(problem) == "rubrics/x.yaml: id: wrong"


def test_every_problem_of_every_file_is_reported(tmp_path):
    _write(tmp_path, _edit("scale", [0, 1, 0.5, 2]), "x")
    bad = _edit("criteria.0.levels.0.description", "")
    bad["id"] = "wrong"
    _write(tmp_path, bad, "y")
    _write(tmp_path, "a: [", "z")
    _write(tmp_path, {**BASE, "id": "ok"}, "ok")
    lines = [str(p) for p in validate_rubrics(tmp_path)]
    assert any("x.yaml: scale:" in line for line in lines)
    assert any("y.yaml: id:" in line for line in lines)
    assert any("y.yaml: criteria[0].levels[0].description:" in line for line in lines)
    assert any("z.yaml: invalid YAML" in line for line in lines)
    assert not any("ok.yaml" in line for line in lines)


def test_load_rubric_error_types(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(FileNotFoundError, match=re.escape(str(missing.resolve()))):
        load_rubric(missing)
    with pytest.raises(ValueError, match="invalid YAML") as info:
        load_rubric(_write(tmp_path, "a: [", "bad"))
    assert isinstance(info.value.__cause__, yaml.YAMLError)
    with pytest.raises(TypeError, match="root must be a mapping"):
        load_rubric(_write(tmp_path, "- 1\n", "root"))
    with pytest.raises(RubricError) as info:
        load_rubric(_write(tmp_path, _edit("scale", []), "x"))
    assert info.value.problems[0].key == "scale"


def test_load_rubric_by_id_unknown_lists_known_ids(tmp_path):
    _write(tmp_path, BASE)
    assert load_rubric_by_id("x", tmp_path).id == "x"
    assert list_rubrics(tmp_path) == ["x"]
    with pytest.raises(FileNotFoundError, match=r"known: \['x'\]"):
        load_rubric_by_id("y", tmp_path)
    with pytest.raises(FileNotFoundError, match="rubrics directory not found"):
        validate_rubrics(tmp_path / "missing")


def test_aliases_load_and_resolve(tmp_path):
    rubric = load_rubric(_write(tmp_path, _edit("criteria.1.aliases", ["PQ", "quality"])))
    assert rubric.criterion("PR").aliases == ("PQ", "quality")
    assert rubric.resolve("quality").key == "PR"
    assert rubric.resolve("XX") is None


def test_variant_of_must_name_a_rubric_with_the_same_criteria_and_scale(tmp_path):
    _write(tmp_path, {**BASE, "id": "base"}, "base")
    _write(tmp_path, {**BASE, "id": "ok", "variant_of": "base"}, "ok")
    _write(tmp_path, {**BASE, "id": "lost", "variant_of": "nowhere"}, "lost")
    other = _edit("scale", [0, 1], {**BASE, "id": "other", "variant_of": "base"})
    for criterion in other["criteria"]:
        criterion["levels"] = _levels([0, 1], criterion["key"])
    _write(tmp_path, other, "other")
    lines = [str(p) for p in validate_rubrics(tmp_path)]
    assert len(lines) == 2, lines
    assert any("lost.yaml: variant_of: no valid rubric 'nowhere'" in line for line in lines)
    assert any("other.yaml: variant_of: criteria keys and scale differ from 'base'" in line
               for line in lines)

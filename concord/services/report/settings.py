"""What a study's settings say about its statistics: derived criteria and flag thresholds.

The derived criterion comes from the study rubric's ``combine`` (per dimension when the
study has per-dimension rubrics); the flag thresholds from ``settings["quality"]``.
"""

from __future__ import annotations

from collections.abc import Mapping

from concord import check_settings
from concord.errors import ConcordError
from concord.services.labelling import common
from concord.stats import Derived, QualityThresholds
from concord.stats.report.pair_sections import PairOptions
from concord.store import studies as study_store

# The name of a rubric's derived (combined) criterion.
DERIVED_NAME = "O"


def derived_criteria(study: study_store.Study | None,
                     dimensions: list[str] | None = None) -> list[Derived]:
    """The derived criterion (``O``) of the study's rubric ``combine``, if it has one.

    Per-dimension rubrics (``settings["rubrics"] = {dimension: rubric id}``) give each
    listed dimension its own rubric's combine; the study rubric covers the others.
    """
    if study is None:
        return []
    per_dim = dict(study.settings.get("rubrics") or {})
    specs: list[Derived] = []
    if per_dim:
        rest = tuple(d for d in (dimensions or []) if d not in per_dim)
        for dim, rubric_id in sorted(per_dim.items()):
            specs += _combine_of(study, rubric_id, (str(dim),))
        return specs + (_combine_of(study, study.rubric, rest) if rest else [])
    return _combine_of(study, study.rubric, None)


def _combine_of(study: study_store.Study, rubric_id: str | None,
                dims: tuple[str, ...] | None) -> list[Derived]:
    if not rubric_id:
        return []
    try:
        combine = common.study_rubric(study, rubric_id).combine
    except FileNotFoundError as exc:  # a rubric file renamed or removed since the import
        raise ConcordError(f"cannot derive criteria: {exc}") from exc
    if combine is None:
        return []
    return [Derived(DERIVED_NAME, combine.method, tuple(combine.criteria), dims)]


def quality_thresholds(study: study_store.Study | None) -> QualityThresholds:
    """The study's flag thresholds (settings ``quality``; defaults for the rest).

    Raises:
        ConcordError: A bad ``quality`` setting, named with the study.
    """
    settings = {} if study is None else study.settings.get("quality")
    try:
        # gold_every, warn_after and block_after act while raters work (check_settings).
        return QualityThresholds.from_settings(check_settings.split(settings)[0]
                                               if isinstance(settings, dict)
                                               else _not_a_mapping(settings))
    except ValueError as exc:
        where = "" if study is None else f"study {study.name!r}: "
        raise ConcordError(f"{where}{exc}") from exc


def _not_a_mapping(value: object) -> dict:
    if value is None:
        return {}
    raise ValueError(f"quality settings must be a mapping, got {value!r}")


# The study's pair-score settings (manifest ``pairs:``, kept as ``pair_scores``; the
# report's CLI options override them) and the fields of PairOptions they fill.
PAIR_SETTINGS = {"bt_prior": "bt_prior", "elo_scale": "scale", "elo_base": "odds",
                 "elo_initial": "initial", "bootstrap": "bootstrap"}


def pair_options(study: study_store.Study | None,
                 overrides: Mapping[str, object] | None = None) -> PairOptions:
    """The conventions of the study's Bradley–Terry and Elo scores: its ``pairs:`` settings,
    then ``overrides`` (the keys of :data:`PAIR_SETTINGS`), then the arena defaults.

    Raises:
        ConcordError: An unknown key or a bad value, named with the study.
    """
    stored = {} if study is None else (study.settings.get("pair_scores") or {})
    given = {**{k: v for k, v in stored.items() if k in PAIR_SETTINGS},
             **{k: v for k, v in (overrides or {}).items() if v is not None}}
    unknown = sorted(set(overrides or {}) - set(PAIR_SETTINGS))
    where = f"study {study.name!r}: " if study is not None else ""
    if unknown:
        raise ConcordError(f"{where}unknown pair settings {unknown} (known: "
                           f"{', '.join(PAIR_SETTINGS)})")
    try:
        return PairOptions(**{PAIR_SETTINGS[k]: v for k, v in given.items()})
    except ValueError as exc:
        raise ConcordError(f"{where}pair settings: {exc}") from exc

"""What a study report is asked for, resolved once at the edge and passed down typed.

``stats``, the dashboard and the dataset export turn what they were given (a study name,
flags, widgets) into a :class:`ReportRequest` with :func:`resolve`: the study looked up
once, its dimensions read once, the filters checked, and every option with its default
(:class:`ReportOptions`). The layers below (the report cache, the frames, the report)
take the request and never look the study up again.

Imports no statistics (scipy): ``stats`` resolves, and answers a typo at once, before
they load.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlite_utils import Database

from concord.errors import NotFoundError
from concord.store import studies as study_store

# A pair-score override's value: a number, or the bootstrap unit ("prompt" or "vote").
PairValue = float | str


@dataclass(frozen=True, slots=True)
class ReportOptions:
    """Every option of a study report, with its default.

    With the study and the code, the options are the report cache's key
    (:func:`concord.services.report.cache.cache_key`), so the CLI and the dashboard asking
    for the same report share one entry.

    Attributes:
        n_boot: Prompt-bootstrap resamples of every CI.
        n_perm: Permutations of the model-level p-values.
        seed: Seed of all resampling.
        dimension: Only prompts of this dimension (ratings, rankings and scores).
        metric: Only this metric (human vs metric and benchmarks).
        by_dimension: Add per-dimension model scores and agreement.
        model_score: Human model score of the model-level correlation
            (``mean_image_means`` or ``mean_rater_means``).
        n_disagreements: Images listed per metric × judge × human source.
        pairs: Pair-score settings over the study's, as ``(key, value)`` pairs
            (``bt_prior``, ``elo_scale``, ``elo_base``, ``elo_initial``, ``bootstrap``;
            see :func:`concord.services.report.settings.pair_options`), kept sorted by
            key; :func:`pair_overrides` makes them from a mapping.
    """

    n_boot: int = 1000
    n_perm: int = 1000
    seed: int = 0
    dimension: str | None = None
    metric: str | None = None
    by_dimension: bool = False
    model_score: str = "mean_image_means"
    n_disagreements: int = 20
    pairs: tuple[tuple[str, PairValue], ...] = ()

    def __post_init__(self) -> None:  # one order, so equal options are equal
        object.__setattr__(self, "pairs", tuple(sorted(self.pairs)))

    def key(self) -> dict[str, object]:
        """The options as the cache key holds them (JSON; ``pairs`` None when empty)."""
        return {"n_boot": self.n_boot, "n_perm": self.n_perm, "seed": self.seed,
                "dimension": self.dimension, "metric": self.metric,
                "by_dimension": self.by_dimension, "model_score": self.model_score,
                "n_disagreements": self.n_disagreements,
                "pairs": dict(self.pairs) or None}


def pair_overrides(values: Mapping[str, PairValue | None]) -> tuple[tuple[str, PairValue], ...]:
    """:attr:`ReportOptions.pairs` of a mapping, the None values (not given) left out."""
    return tuple(sorted((k, v) for k, v in values.items() if v is not None))


@dataclass(frozen=True, slots=True)
class ReportRequest:
    """A study report asked for: the study, its dimensions (for per-dimension rubrics'
    derived criteria) and the options, whose filters the study has."""

    study: study_store.Study
    dimensions: tuple[str, ...]
    options: ReportOptions = ReportOptions()


def resolve(db: Database, study_name: str,
            options: ReportOptions = ReportOptions()) -> ReportRequest:
    """The request for ``study_name``'s report under ``options``.

    Raises:
        NotFoundError: No such study (naming the studies there are), or a ``dimension``
            or ``metric`` filter the study does not have (naming those it has).
    """
    return for_study(db, study_store.get_study(db, study_name), options)


def for_study(db: Database, study: study_store.Study,
              options: ReportOptions = ReportOptions()) -> ReportRequest:
    """:func:`resolve` for a study already looked up."""
    dims = study_store.dimensions(db, study.id)
    _check_choice(options.dimension, dims, "dimension", study.name)
    if options.metric is not None:
        metrics = sorted({m for m, _ in study_store.metric_judges(db, study.id)})
        _check_choice(options.metric, metrics, "metric", study.name)
    return ReportRequest(study, tuple(dims), options)


def _check_choice(value: str | None, known: list[str], what: str, study: str) -> None:
    if value is not None and value not in known:
        raise NotFoundError(f"study {study!r} has no {what} {value!r} "
                            f"({what}s: {', '.join(known) or 'none'})")

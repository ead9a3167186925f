"""Attention checks that act while raters work.

Gold items reach every rater at a fixed rate (``quality.gold_every``, see
concord.services.labelling.common.gold_due). The first answer a rater gives to each gold item is
judged when it is stored: a scoring gold is right when every gold criterion is within its
tolerance, a gold ranking set when each gold image gets its expected rank ± tolerance, a
gold pair when the known better image is chosen (a tie or "both bad" is wrong). After
``quality.warn_after`` failed checks the rater is warned; after ``quality.block_after``
their session ends with the screen-out code (concord.services.labelling.gate).
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlite_utils import Database

from concord.services.labelling import common, gate
from concord.store import checks as check_store
from concord.store import pairs as pair_store
from concord.store.crowd import onboarding as onboarding_store
from concord.store.studies import Study


def wrong_criteria(expected: Mapping[str, tuple[float, float]],
                   given: Mapping[str, float | None]) -> tuple[str, ...]:
    """The criteria answered outside the gold tolerance (or not answered)."""
    out = []
    for criterion, (value, tol) in expected.items():
        got = given.get(criterion)
        if got is None or abs(got - value) > tol + 1e-9:
            out.append(criterion)
    return tuple(out)


def _rating_right(db: Database, image_id: int, values: Mapping[str, float]) -> bool | None:
    expected = onboarding_store.gold_of(db, image_id)
    return None if not expected else not wrong_criteria(expected, values)


def _ranking_right(db: Database, prompt_id: int, ranks: Mapping[int, float]) -> bool | None:
    expected = check_store.ranking_gold(db, prompt_id)
    if not expected:
        return None
    return all(i in ranks and abs(ranks[i] - rank) <= tol + 1e-9
               for i, (rank, tol) in expected.items())


def _pair_right(db: Database, pair_id: int, chosen: int | None) -> bool | None:
    better = pair_store.get_pair(db, pair_id).better
    return None if better is None else chosen == better


def after_answer(db: Database, study: Study, rater_id: int, unit: str, item_id: int,
                 answer: object) -> None:
    """Judge a new answer when its item is gold, keep the first result, and end the
    session at ``quality.block_after`` failures. Inside the submit's transaction.

    ``answer``: the values (image), the ranks by image id (prompt) or the chosen image id,
    None for a tie or "both bad" (pair).
    """
    if unit == "image":
        passed = _rating_right(db, item_id, answer)  # type: ignore[arg-type]
    elif unit == "prompt":
        passed = _ranking_right(db, item_id, answer)  # type: ignore[arg-type]
    else:
        passed = _pair_right(db, item_id, answer)  # type: ignore[arg-type]
    if passed is None or not check_store.record(db, study.id, rater_id, unit, item_id,
                                                passed):
        return
    limit = gate.checks_of(study).block_after
    if limit is not None and check_store.counts(db, study.id, rater_id)[1] >= limit:
        check_store.end_session(db, study.id, rater_id, "checks")


def warning(db: Database, study_name: str, rater_id: int) -> str | None:
    """The notice a rater sees once their failed checks reach ``quality.warn_after``."""
    study = common.member_study(db, study_name, rater_id)
    cfg = gate.checks_of(study)
    failed = check_store.counts(db, study.id, rater_id)[1]
    if cfg.warn_after is None or failed < cfg.warn_after:
        return None
    ends = (f" After {cfg.block_after} the study ends for you."
            if cfg.block_after is not None else "")
    return (f"{failed} of your answers to check items (items with a known answer) were "
            "wrong. Please read each prompt and look at each image carefully." + ends)

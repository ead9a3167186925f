"""Pieces shared by the rating, ranking and pairwise services."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import secrets
from dataclasses import dataclass

from sqlite_utils import Database

from concord.errors import AuthError, NotFoundError, RatingError
from concord.rubrics import Rubric, load_rubric_by_id
from concord.store import drafts, work
from concord.store import raters as rater_store
from concord.store import studies as study_store
from concord.store.db import now, transaction


@dataclass(frozen=True, slots=True)
class Progress:
    """A rater's progress in one study and unit."""

    done: int
    skipped: int
    assigned: int

    @property
    def remaining(self) -> int:
        """Items still to do."""
        return max(self.assigned - self.done - self.skipped, 0)


def new_submission() -> str:
    """A nonce minted when a form is shown; the write it carries is stored at most once."""
    return secrets.token_hex(16)


@functools.lru_cache(maxsize=64)
def rubric(rubric_id: str) -> Rubric:
    """A rubric by id, parsed once per process (rubric files are read-only data)."""
    return load_rubric_by_id(rubric_id)


def member_study(db: Database, study_name: str, rater_id: int) -> study_store.Study:
    """The study, if this rater is assigned to it and still allowed in; AuthError otherwise.

    Every rater action goes through here, so a revoked invite stops working at once, even
    in a browser tab that was already open.
    """
    if rater_store.is_revoked(db, rater_id):
        raise AuthError("this invite link has been revoked")
    study = study_store.get_study(db, study_name)
    if study.id not in rater_store.studies_of(db, rater_id):
        raise AuthError(f"you are not assigned to the study {study_name!r}")
    return study


def order_key(seed: int, rater_id: int, item_id: int) -> str:
    """A per-rater pseudo-random order of a few items (the ranking grid), stable across
    requests."""
    return hashlib.sha256(f"{seed}:{rater_id}:{item_id}".encode()).hexdigest()


def pick_next(db: Database, study: study_store.Study, rater_id: int, unit: str) -> int | None:
    """Open the rater's next item: their own open one while its lease holds (or, after it
    ran out, while its slot is still free), else the least-covered item in their own
    shuffled order.

    Runs inside the caller's transaction, so concurrent raters see each other's claims.
    """
    cutoff = work.lease_cutoff(study.lease_minutes)
    for current in work.open_assignments(db, study.id, rater_id, unit):
        if current.opened_at >= cutoff:
            return current.item_id
        if work.slot_free(db, study.id, rater_id, unit, current.item_id, study.k_for(unit),
                          cutoff=cutoff):
            work.claim(db, study.id, rater_id, unit, current.item_id)  # a fresh lease
            return current.item_id
        work.release(db, study.id, rater_id, unit, current.item_id)
    best = _best_candidate(db, study, rater_id, unit, cutoff)
    if best is not None:
        work.claim(db, study.id, rater_id, unit, best)
    return best


def _best_candidate(db: Database, study: study_store.Study, rater_id: int, unit: str,
                    cutoff: str) -> int | None:
    """Least-covered item first, then the rater's own shuffled order."""
    seed = int(study.settings.get("seed", 0))
    best = work.candidates(db, study.id, rater_id, unit, study.k_for(unit), cutoff=cutoff,
                           seed=seed, limit=1)
    return best[0].item_id if best else None


def peek_next(db: Database, study: study_store.Study, rater_id: int, unit: str,
              current: int) -> int | None:
    """The item the rater will most likely get after ``current`` (nothing is claimed).

    Used only to preload the next image; being wrong costs one wasted download.
    """
    others = [a.item_id for a in work.open_assignments(db, study.id, rater_id, unit)
              if a.item_id != current]
    cutoff = work.lease_cutoff(study.lease_minutes)
    return others[0] if others else _best_candidate(db, study, rater_id, unit, cutoff)


def progress(db: Database, study: study_store.Study, rater_id: int, unit: str) -> Progress:
    """Done, skipped and assigned (done + skipped + open + still available) counts."""
    counts = work.status_counts(db, study.id, rater_id, unit)
    available = work.count_candidates(db, study.id, rater_id, unit, study.k_for(unit),
                                      cutoff=work.lease_cutoff(study.lease_minutes))
    assigned = counts["done"] + counts["skipped"] + counts["open"] + available
    return Progress(counts["done"], counts["skipped"], assigned)


def seconds_since(stamp: str) -> float:
    """Seconds from an ISO timestamp to now (server-side time on item)."""
    start = dt.datetime.fromisoformat(stamp)
    return round((dt.datetime.fromisoformat(now()) - start).total_seconds(), 3)


def require(condition: bool, message: str) -> None:
    """Raise NotFoundError unless ``condition`` (an item that is not the rater's)."""
    if not condition:
        raise NotFoundError(message)


def skip_item(db: Database, study_name: str, rater_id: int, unit: str, item_id: int,
              reason: str) -> None:
    """Skip an image or a ranking set with a reason; it is not served to this rater again."""
    if not reason.strip():
        raise RatingError("give a reason for skipping")
    study = member_study(db, study_name, rater_id)
    with transaction(db):
        require(work.get_assignment(db, study.id, rater_id, unit, item_id) is not None,
                f"{unit} {item_id} was never given to you")
        work.add_mark(db, study.id, rater_id, unit, item_id, "skip", reason.strip())
        work.close(db, study.id, rater_id, unit, item_id, "skipped")
        drafts.drop(db, study.id, rater_id, unit, item_id)


def reopen_item(db: Database, study_name: str, rater_id: int, unit: str, item_id: int) -> None:
    """Take a skipped (or done) item up again: it becomes the rater's next item, on a fresh
    lease."""
    study = member_study(db, study_name, rater_id)
    with transaction(db):
        require(work.get_assignment(db, study.id, rater_id, unit, item_id) is not None,
                f"{unit} {item_id} was never given to you")
        work.claim(db, study.id, rater_id, unit, item_id)

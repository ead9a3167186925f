"""Pieces shared by the rating, ranking and pairwise services."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sqlite_utils import Database

from concord.errors import AuthError, NotFoundError, RatingError
from concord.rubrics import DEFAULT_RUBRICS_DIR, Rubric, copies, load_rubric_by_id
from concord.services.labelling import gate
from concord.store import drafts, work
from concord.store import raters as rater_store
from concord.store import studies as study_store
from concord.store.db import now, transaction

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Progress:
    """A rater's progress in one study and unit: ``assigned`` is the quota of done items
    when the study has one (``by_quota``; skips are beside it, never in it), else the
    items done, skipped, open and still available."""

    done: int
    skipped: int
    assigned: int
    by_quota: bool = False

    @property
    def remaining(self) -> int:
        """Items still to do."""
        if self.by_quota:
            return max(self.assigned - self.done, 0)
        return max(self.assigned - self.done - self.skipped, 0)


@dataclass(frozen=True, slots=True)
class BlindImage:
    """An image as a rater's screen gets it (a side of a pair, one of a ranking set): by
    opaque id, never by model."""

    image_id: int
    public_id: str
    image_path: Path


def new_submission() -> str:
    """A nonce minted when a form is shown; the write it carries is stored at most once."""
    return secrets.token_hex(16)


def rubric(rubric_id: str) -> Rubric:
    """A rubric by id, parsed again only when its file changes (size or modification time):
    a rubric edited while the app runs is the one its pages and reports use, and the one
    the report cache keys them by (``concord.services.report.cache``)."""
    try:
        st = (DEFAULT_RUBRICS_DIR / f"{rubric_id}.yaml").stat()
        stamp: tuple[int, int] | None = (st.st_size, st.st_mtime_ns)
    except (OSError, ValueError):  # no such file: load_rubric_by_id names the known ones
        stamp = None
    return _parsed_rubric(rubric_id, stamp)


@functools.lru_cache(maxsize=64)
def _parsed_rubric(rubric_id: str, stamp: tuple[int, int] | None) -> Rubric:
    return load_rubric_by_id(rubric_id)


def study_rubric(study: study_store.Study, rubric_id: str) -> Rubric:
    """A rubric of the study: the copy kept with it when the rubric was given as a file
    (``settings.rubric_files``, see :mod:`concord.rubrics.copies`), else ``rubrics/``."""
    text = (study.settings.get("rubric_files") or {}).get(rubric_id)
    if isinstance(text, str):
        return copies.from_text(text, rubric_id)
    return rubric(rubric_id)


# A rater the database no longer holds: it was restored from a copy older than their link.
UNKNOWN_LINK = ("this invite link is not known here (any more): the study's data may have "
                "been restored from an earlier copy")


def member_study(db: Database, study_name: str, rater_id: int) -> study_store.Study:
    """The study, if this rater is assigned to it and still allowed in; AuthError otherwise.

    Every rater action goes through here, so a revoked invite stops working at once, even
    in a browser tab that was already open.
    """
    state = rater_store.link_state(db, rater_id)
    if state == "unknown":
        raise AuthError(UNKNOWN_LINK)
    if state == "revoked":
        raise AuthError("this invite link has been revoked")
    study = study_store.get_study(db, study_name)
    if study.id not in rater_store.studies_of(db, rater_id):
        raise AuthError(f"you are not assigned to the study {study_name!r}")
    return study


def order_key(seed: int, rater_id: int, item_id: int) -> str:
    """A per-rater pseudo-random order of a few items (the ranking grid), stable across
    requests."""
    return hashlib.sha256(f"{seed}:{rater_id}:{item_id}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Pick:
    """What a rater gets next, and what comes with it from the same look at the queue."""

    item_id: int | None
    following: int | None  # the item most likely served after this one (to preload)
    progress: Progress


def pick_next(db: Database, study: study_store.Study, rater_id: int, unit: str) -> Pick:
    """Open the rater's next item: their own open one while its lease holds (or, after it
    ran out, while its slot is still free), else, when a gold item is due (one in each
    block of ``quality.gold_every`` items, see :func:`gold_due`), the next gold item, else
    the least-covered item in their own shuffled order. One look at the queue also gives
    the item to preload and the progress.

    Runs inside the caller's transaction, so concurrent raters see each other's claims.
    A rater who has not passed the study's consent and practice, or whose session ended,
    gets GateError; one who reached the unit's quota of done items gets None.
    """
    gate.check_work(db, study, rater_id)
    if gate.quota_left(db, study, rater_id, unit) == 0:
        return Pick(None, None, progress(db, study, rater_id, unit))
    cutoff = work.lease_cutoff(study.lease_minutes)
    opened = work.open_assignments(db, study.id, rater_id, unit)
    current, kept = _kept_open(db, study, rater_id, unit, opened, cutoff)
    seed = int(study.settings.get("seed", 0))
    best = work.candidates(db, study.id, rater_id, unit, study.k_for(unit), cutoff=cutoff,
                           seed=seed, limit=2, practice=gate.practice_count(study),
                           gold_first=current is None and gold_due(db, study, rater_id, unit))
    available = best[0].total if best else 0
    if current is None and best:
        current, best, available = best[0].item_id, best[1:], available - 1
        work.claim(db, study.id, rater_id, unit, current)
    others = [i for i in kept if i != current] + [c.item_id for c in best]
    counts = work.status_counts(db, study.id, rater_id, unit)
    return Pick(current, others[0] if others else None,
                _progress(study, unit, counts, counts["open"] + available))


def gold_due(db: Database, study: study_store.Study, rater_id: int, unit: str) -> bool:
    """Whether the rater's next item should be a gold item (an attention check).

    The items a rater is served are cut into blocks of ``quality.gold_every`` (N); in
    each block one position, drawn per rater, unit and block by a keyed hash (BLAKE2b,
    key = study seed), is a gold item's, whatever the coverage. So every rater served N
    items meets at least one, and a reload (the same counts) gives the same answer. A
    gold item served earlier (when no other item was left) counts toward the blocks.
    """
    every = gate.checks_of(study).gold_every
    served, gold = work.served_counts(db, study.id, rater_id, unit)
    block, offset = divmod(served, every)
    key = f"gold:{int(study.settings.get('seed', 0))}:{rater_id}:{unit}".encode()[:64]
    digest = hashlib.blake2b(str(block).encode(), key=key, digest_size=8).digest()
    slot = int.from_bytes(digest, "big") % every
    return gold < block + (1 if offset >= slot else 0)


def _kept_open(db: Database, study: study_store.Study, rater_id: int, unit: str,
               opened: list[work.Assignment], cutoff: str) -> tuple[int | None, list[int]]:
    """The open item the rater goes on with (a lease that ran out is renewed while its
    slot is free, else released), and the open items still theirs."""
    kept = [a.item_id for a in opened]
    for a in opened:
        if a.opened_at >= cutoff:
            return a.item_id, kept
        if work.slot_free(db, study.id, rater_id, unit, a.item_id, study.k_for(unit),
                          cutoff=cutoff):
            work.claim(db, study.id, rater_id, unit, a.item_id)  # a fresh lease
            return a.item_id, kept
        work.release(db, study.id, rater_id, unit, a.item_id)
        kept.remove(a.item_id)
    return None, kept


def progress(db: Database, study: study_store.Study, rater_id: int, unit: str) -> Progress:
    """Done, skipped and assigned counts: assigned is the unit's quota of done items when
    the study has one (skips never change it), else done + skipped + open + still
    available."""
    counts = work.status_counts(db, study.id, rater_id, unit)
    if gate.quota(study, unit) is not None:
        return _progress(study, unit, counts, 0)
    available = work.count_candidates(db, study.id, rater_id, unit, study.k_for(unit),
                                      cutoff=work.lease_cutoff(study.lease_minutes),
                                      practice=gate.practice_count(study))
    return _progress(study, unit, counts, counts["open"] + available)


def _progress(study: study_store.Study, unit: str, counts: dict[str, int],
              ahead: int) -> Progress:
    wanted = gate.quota(study, unit)  # a crowd study's items_per_rater
    if wanted is not None:
        return Progress(counts["done"], counts["skipped"], wanted, by_quota=True)
    return Progress(counts["done"], counts["skipped"], counts["done"] + counts["skipped"] + ahead)


def seconds_since(stamp: str) -> float:
    """Seconds from an ISO timestamp to now (server-side time on item)."""
    start = dt.datetime.fromisoformat(stamp)
    return round((dt.datetime.fromisoformat(now()) - start).total_seconds(), 3)


def require(condition: bool, message: str) -> None:
    """Raise NotFoundError unless ``condition`` (an item that is not the rater's)."""
    if not condition:
        raise NotFoundError(message)


def found(value: T | None, message: str) -> T:
    """``value``; NotFoundError when it is None (an item that is not the rater's)."""
    if value is None:
        raise NotFoundError(message)
    return value


def skip_item(db: Database, study_name: str, rater_id: int, unit: str, item_id: int,
              reason: str) -> None:
    """Skip an image, a ranking set or a pair with a reason; it is not served to this rater
    again. A skip past the study's limit ends the rater's session (gate.after_skip)."""
    if not reason.strip():
        raise RatingError("give a reason for skipping")
    study = member_study(db, study_name, rater_id)
    with transaction(db):
        gate.check_open(db, study, rater_id)
        require(work.get_assignment(db, study.id, rater_id, unit, item_id) is not None,
                f"{unit} {item_id} was never given to you")
        work.add_mark(db, study.id, rater_id, unit, item_id, "skip", reason.strip())
        work.close(db, study.id, rater_id, unit, item_id, "skipped")
        drafts.drop(db, study.id, rater_id, unit, item_id)
        gate.after_skip(db, study, rater_id)


def reopen_item(db: Database, study_name: str, rater_id: int, unit: str, item_id: int) -> None:
    """Take a skipped (or done) item up again: it becomes the rater's next item, on a fresh
    lease."""
    study = member_study(db, study_name, rater_id)
    with transaction(db):
        gate.check_open(db, study, rater_id)
        require(work.get_assignment(db, study.id, rater_id, unit, item_id) is not None,
                f"{unit} {item_id} was never given to you")
        work.claim(db, study.id, rater_id, unit, item_id)

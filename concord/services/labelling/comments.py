"""A rater's free-text comment on an item (study setting ``comments``: ``off``, the default,
``optional`` or ``required``; docs/manifest.md#comments). The comment is stored with the
label revision it came with (concord.store.comments) and exported beside it; it never
enters a statistic."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from sqlite_utils import Database

from concord.errors import RatingError
from concord.store import comments as comment_store
from concord.store.studies import Study

MODES = ("off", "optional", "required")
MAX_CHARS = 10_000  # as an imported comment may have (concord.importers.label_fields)
_ALLOWED = {"\n", "\t"}


def mode(study: Study) -> str:
    """The study's comment setting (``off`` when unset or unknown)."""
    value = study.settings.get("comments", "off")
    return value if value in MODES else "off"


@dataclass(frozen=True, slots=True)
class Shown:
    """The comment field of a rater screen: the study's setting and the rater's latest
    comment on the item (shown again when an answer is edited or undone)."""

    mode: str = "off"
    text: str = ""


def shown(db: Database, study: Study, rater_id: int, unit: str, item_id: int) -> Shown:
    """What the comment field shows for one item (no query when comments are off)."""
    setting = mode(study)
    if setting == "off":
        return Shown()
    return Shown(setting, comment_store.latest(db, study.id, rater_id, unit, item_id))


def checked(study: Study, text: str | None) -> str | None:
    """The comment to store with a label (None: none), after the study's rules.

    Raises:
        RatingError: a comment in a study that takes none, none where one is required, or
            one that is too long or holds control characters.
    """
    text = (text or "").strip()
    setting = mode(study)
    if setting == "off":
        if text:
            raise RatingError("this study takes no comments")
        return None
    if not text:
        if setting == "required":
            raise RatingError("write a comment: this study asks for one with every answer")
        return None
    if len(text) > MAX_CHARS:
        raise RatingError(f"a comment has at most {MAX_CHARS:,} characters ({len(text):,})")
    bad = next((c for c in text if c not in _ALLOWED
                and unicodedata.category(c) in {"Cc", "Cs", "Zl", "Zp"}), None)
    if bad is not None:
        raise RatingError(f"a comment may not hold the control character U+{ord(bad):04X}")
    return text

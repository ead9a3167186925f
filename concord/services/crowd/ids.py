"""The participant parameters crowd platforms append to a study link, and their formats.

A participant id is checked against its platform's format (a link created with
``--any-id`` accepts any id of 1 to 64 letters, digits, ``-`` or ``_``):

- Prolific ``PROLIFIC_PID``: 24 hexadecimal characters (Prolific ids are MongoDB object
  ids), compared in lower case;
- MTurk ``workerId``: ``A`` and 11 to 13 more capital letters or digits (12 to 14 in
  all), compared in upper case.

Case is folded because one person must not become two participants by changing the
case of their id. The platform's session parameter (Prolific ``SESSION_ID``, MTurk
``assignmentId``) is known only to the participant and the platform: a visit with the id
*and* a session the participant was seen with before is theirs (concord.services.crowd.links).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from concord.errors import ConcordError


@dataclass(frozen=True, slots=True)
class Platform:
    """The URL parameters a crowd platform appends to a study link."""

    label: str
    id_param: str
    params: tuple[str, ...]
    id_required: bool
    id_format: re.Pattern | None  # None: the generic format
    id_hint: str
    fold: str  # "lower", "upper" or "" (how the id is compared)
    session_param: str | None  # a per-session value only the participant is given


GENERIC = re.compile(r"[A-Za-z0-9_-]{1,64}")
GENERIC_HINT = "1 to 64 letters, digits, '-' or '_'"
PLATFORMS = {
    "prolific": Platform("Prolific", "PROLIFIC_PID", ("STUDY_ID", "SESSION_ID"), True,
                         re.compile(r"[0-9a-f]{24}"), "24 hexadecimal characters", "lower",
                         "SESSION_ID"),
    "mturk": Platform("MTurk", "workerId", ("assignmentId", "hitId", "turkSubmitTo"), True,
                      re.compile(r"A[0-9A-Z]{11,13}"),
                      "'A' and 11 to 13 more capital letters or digits", "upper",
                      "assignmentId"),
    "none": Platform("this study", "participant", (), False, None, GENERIC_HINT, "", None),
}
# The platform a study link is for unless told otherwise (the CLI and the Raters page).
DEFAULT_PLATFORM = "prolific"
# MTurk shows a HIT to workers before they accept it with this assignment id.
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
_PARAM = re.compile(r"[\x21-\x7e]{1,512}")  # visible ASCII (turkSubmitTo is a URL)
ANONYMOUS = "anon-"


class JoinError(ConcordError):
    """A study link opened without what the platform must send (the participant id), or
    a visit the study does not accept (see the subclasses)."""


class PreviewError(JoinError):
    """An MTurk worker previewing the HIT: they must accept it to start."""


def participant_id(platform: str, params: Mapping[str, str], *, strict: bool) -> str | None:
    """The participant id the platform sent, in its compared case; None for a link of
    platform ``none`` opened without one.

    Raises:
        PreviewError: an MTurk preview.
        JoinError: the id is missing (where the platform must send it) or malformed.
    """
    spec = PLATFORMS[platform]
    if platform == "mturk" and params.get("assignmentId") == MTURK_PREVIEW:
        raise PreviewError("this is a preview of the task: accept the HIT to start")
    pid = str(params.get(spec.id_param) or "").strip()
    if not pid:
        if spec.id_required:
            raise JoinError(f"this study link needs your {spec.label} ID (the "
                            f"{spec.id_param} parameter); open the study from {spec.label}")
        return None
    folded = pid.lower() if spec.fold == "lower" else pid.upper() if spec.fold else pid
    if strict and spec.id_format is not None:
        if not spec.id_format.fullmatch(folded):
            raise JoinError(f"{spec.id_param} {pid[:80]!r} is not a {spec.label} ID "
                            f"({spec.id_hint}); open the study from {spec.label}")
        return folded
    if not GENERIC.fullmatch(pid):
        raise JoinError(f"{spec.id_param} must be {GENERIC_HINT}")
    return folded


def anonymous_id() -> str:
    """A fresh id for a visitor of a link of platform ``none`` who brought none."""
    return ANONYMOUS + secrets.token_hex(8)


def captured(platform: str, params: Mapping[str, str]) -> dict[str, str]:
    """The platform's other parameters (study, session, assignment ids) as sent.

    Raises:
        JoinError: a value that is not 1 to 512 visible ASCII characters.
    """
    out = {}
    for key in PLATFORMS[platform].params:
        value = str(params.get(key) or "").strip()
        if value:
            if not _PARAM.fullmatch(value):
                raise JoinError(f"{key} must be 1 to 512 visible characters")
            out[key] = value
    return out

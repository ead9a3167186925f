"""Study links for crowd platforms: create, rotate, revoke, and join through one.

A study link (``<base>/?join=<token>``) lets anyone with it sign up, without a personal
invite. The platform appends its participant parameters (Prolific: ``PROLIFIC_PID``,
``STUDY_ID``, ``SESSION_ID``; MTurk: ``workerId``, ``assignmentId``, ``hitId``); the
participant id is the identity, so one id is one rater in a study, whatever tab or device
they come back from. Joining gives the rater their own token, derived from the link token
and the participant id, so coming back through the link gives the same token: an open tab
keeps working.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from sqlite_utils import Database

from concord.errors import AuthError, ConcordError
from concord.store import crowd as crowd_store
from concord.store import raters as rater_store
from concord.store import studies as study_store
from concord.store.db import audit, transaction


@dataclass(frozen=True, slots=True)
class Platform:
    """The URL parameters a crowd platform appends to a study link."""

    label: str
    id_param: str
    params: tuple[str, ...]
    id_required: bool


PLATFORMS = {
    "prolific": Platform("Prolific", "PROLIFIC_PID", ("STUDY_ID", "SESSION_ID"), True),
    "mturk": Platform("MTurk", "workerId", ("assignmentId", "hitId", "turkSubmitTo"), True),
    "none": Platform("this study", "participant", (), False),
}
# MTurk shows a HIT to workers before they accept it with this assignment id.
MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_PARAM = re.compile(r"[\x21-\x7e]{1,512}")  # visible ASCII (turkSubmitTo is a URL)
_URL = re.compile(r"https?://[^\s]{1,2000}")


class JoinError(ConcordError):
    """A study link opened without what the platform must send (the participant id)."""


class PreviewError(JoinError):
    """An MTurk worker previewing the HIT: they must accept it to start."""


@dataclass(frozen=True, slots=True)
class CreatedLink:
    """A new study link: the URL is shown once (only the token's hash is stored)."""

    link: crowd_store.Link
    url: str


@dataclass(frozen=True, slots=True)
class Joined:
    """Who came in through a study link, and the personal token they continue with."""

    rater_id: int
    name: str
    token: str
    study: str
    new: bool


def _check_codes(codes: Mapping[str, str | None]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for kind in ("completion", "screenout"):
        code, url = codes.get(f"{kind}_code"), codes.get(f"{kind}_url")
        if code and url:
            raise ConcordError(f"give a {kind} code or a {kind} URL, not both")
        if code is not None and not _ID.fullmatch(code.strip()):
            raise ConcordError(f"{kind} code {code!r}: 1 to 64 letters, digits, '-' or '_'")
        if url is not None and not _URL.fullmatch(url.strip()):
            raise ConcordError(f"{kind} URL {url!r}: expected an http(s) address")
        out[f"{kind}_code"] = code.strip() if code else None
        out[f"{kind}_url"] = url.strip() if url else None
    return out


def create_link(db: Database, study_name: str, base_url: str, *, platform: str = "prolific",
                codes: Mapping[str, str | None] | None = None, rotate: bool = False,
                actor: str = "cli") -> CreatedLink:
    """A new study link; with ``rotate`` the study's active links are revoked first.

    Raises:
        ConcordError: an unknown platform, or a code and a URL given for the same outcome.
        NotFoundError: no such study.
    """
    if platform not in PLATFORMS:
        raise ConcordError(f"unknown platform {platform!r} (use {', '.join(PLATFORMS)})")
    clean = _check_codes(codes or {})
    study = study_store.get_study(db, study_name)
    token = secrets.token_urlsafe(24)
    with transaction(db):
        revoked = crowd_store.revoke_links(db, study.id) if rotate else 0
        link = crowd_store.insert_link(db, study.id, token, platform, clean)
        audit(db, actor, "crowd_link", study.name, link_id=link.id, platform=platform,
              rotated=revoked, **clean)
    return CreatedLink(link, f"{base_url.rstrip('/')}/?join={token}")


def revoke_links(db: Database, study_name: str, *, actor: str = "cli") -> int:
    """Close the study's links to new sign-ups; raters who joined keep their own links."""
    study = study_store.get_study(db, study_name)
    with transaction(db):
        n = crowd_store.revoke_links(db, study.id)
        audit(db, actor, "crowd_revoke", study.name, links=n)
    return n


def links(db: Database, study_name: str) -> list[crowd_store.Link]:
    """The study's links, newest first."""
    return crowd_store.links(db, study_store.get_study(db, study_name).id)


def rater_token(link_token: str, study_id: int, platform: str, participant_id: str) -> str:
    """The personal token of a participant: the same for every visit through one link.

    Only the link's holders can compute it (it is keyed by the link token), and it gives
    no more than the link itself does: whoever has the link and an id can join as that id.
    """
    mac = hmac.new(link_token.encode(), f"{study_id}:{platform}:{participant_id}".encode(),
                   hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def _participant_id(platform: str, params: Mapping[str, str]) -> str:
    spec = PLATFORMS[platform]
    if platform == "mturk" and params.get("assignmentId") == MTURK_PREVIEW:
        raise PreviewError("this is a preview of the task: accept the HIT to start")
    pid = str(params.get(spec.id_param) or "").strip()
    if not pid:
        if spec.id_required:
            raise JoinError(f"this study link needs your {spec.label} ID (the "
                            f"{spec.id_param} parameter); open the study from {spec.label}")
        return "anon-" + secrets.token_hex(8)
    if not _ID.fullmatch(pid):
        raise JoinError(f"{spec.id_param} must be 1 to 64 letters, digits, '-' or '_'")
    return pid


def _captured(platform: str, params: Mapping[str, str]) -> dict[str, str]:
    out = {}
    for key in PLATFORMS[platform].params:
        value = str(params.get(key) or "").strip()
        if value:
            if not _PARAM.fullmatch(value):
                raise JoinError(f"{key} must be 1 to 512 visible characters")
            out[key] = value
    return out


def join(db: Database, link_token: str, params: Mapping[str, str]) -> Joined:
    """Sign up (or come back) through a study link.

    Raises:
        AuthError: an unknown or closed link, or a participant the researcher revoked.
        JoinError: the platform's participant id is missing or malformed.
    """
    link = crowd_store.link_for_token(db, link_token) if link_token else None
    if link is None:
        raise AuthError("this study link is not valid")
    if not link.active:
        raise AuthError("this study link has been closed")
    pid = _participant_id(link.platform, params)
    captured = _captured(link.platform, params)
    study = study_store.get_study_by_id(db, link.study_id)
    token = rater_token(link_token, study.id, link.platform, pid)
    with transaction(db):
        found = crowd_store.find_participant(db, study.id, link.platform, pid)
        if found is not None:
            rater_id = found.rater_id
            if rater_store.is_revoked(db, rater_id):
                raise AuthError("your participation in this study was ended by the researcher")
            crowd_store.touch_participant(db, rater_id, link.id, captured)
        else:
            rater_id = _new_participant(db, study, link, pid, captured)
        rater_store.set_token(db, rater_id, token)
    name = crowd_store.rater_name(link.platform, pid, study.id)
    return Joined(rater_id, name, token, study.name, found is None)


def _new_participant(db: Database, study: study_store.Study, link: crowd_store.Link, pid: str,
                     captured: dict[str, str]) -> int:
    name = crowd_store.rater_name(link.platform, pid, study.id)
    rater = rater_store.ensure_rater(db, name)
    rater_store.add_to_study(db, rater.id, study.id)
    crowd_store.add_participant(db, study.id, link.platform, pid, rater.id, link.id, captured)
    audit(db, "crowd", "crowd_join", study.name, rater=name, link_id=link.id)
    return rater.id

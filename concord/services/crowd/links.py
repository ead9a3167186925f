"""Study links for crowd platforms: create, rotate, revoke, and join through one.

A study link (``<base>/?join=<token>``) lets anyone with it sign up, without a personal
invite. The platform appends its participant parameters (concord.services.crowd.ids);
the participant id is the identity, one rater per id in a study.

**One person per participant id.** The first visit with an id creates the rater and gives
them a random personal token (only its hash is stored); the browser keeps it (the URL
becomes ``?token=…``, and the app stores it in a cookie). A later visit through the study
link with the same id must prove it is the same person: the personal token (the cookie),
or the platform session the participant was seen with before (Prolific ``SESSION_ID``,
MTurk ``assignmentId``, which only they and the platform know). Without proof the visit
is refused and changes nothing: anyone who knows a link and someone's participant id
cannot become them. Platform parameters are never overwritten: each new session is kept.

**Limits.** Ids must have the platform's format (a link made with ``strict_ids`` off
accepts any); a study takes at most ``crowd.max_participants`` participants,
``crowd.joins_per_minute`` new ones a minute and ``crowd.joins_per_client_per_minute``
from one client; every visit is logged (outcome, a keyed hash of the client address), so
the researcher sees many ids from one client.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlite_utils import Database

from concord.crowd_settings import CrowdSettings
from concord.errors import AuthError, ConcordError, NotFoundError
from concord.services.crowd.ids import (
    DEFAULT_PLATFORM,
    PLATFORMS,
    JoinError,
    PreviewError,
    anonymous_id,
    captured,
    participant_id,
)
from concord.store import raters as rater_store
from concord.store import studies as study_store
from concord.store.crowd import joins as crowd_joins
from concord.store.crowd import links as crowd_store
from concord.store.db import audit, transaction

_PROOFS = 16
_ID_OR_CODE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_URL = re.compile(r"https?://[^\s]{1,2000}")


class TakenError(JoinError):
    """A participant id that already started, visited without the proof of its owner."""


class LimitError(JoinError):
    """The study is full, or too many people are joining at this moment."""


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
    study_id: int = 0


def _check_codes(codes: Mapping[str, str | None]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for kind in ("completion", "screenout"):
        code, url = codes.get(f"{kind}_code"), codes.get(f"{kind}_url")
        if code and url:
            raise ConcordError(f"give a {kind} code or a {kind} URL, not both")
        if code is not None and not _ID_OR_CODE.fullmatch(code.strip()):
            raise ConcordError(f"{kind} code {code!r}: 1 to 64 letters, digits, '-' or '_'")
        if url is not None and not _URL.fullmatch(url.strip()):
            raise ConcordError(f"{kind} URL {url!r}: expected an http(s) address")
        out[f"{kind}_code"] = code.strip() if code else None
        out[f"{kind}_url"] = url.strip() if url else None
    return out


def create_link(db: Database, study_name: str, base_url: str, *,
                platform: str = DEFAULT_PLATFORM,
                codes: Mapping[str, str | None] | None = None, rotate: bool = False,
                strict_ids: bool = True, actor: str = "cli") -> CreatedLink:
    """A new study link; with ``rotate`` the study's active links are revoked first. With
    ``strict_ids`` off it accepts any participant id of 1 to 64 letters, digits, ``-`` or
    ``_`` instead of the platform's format (another platform, a test run).

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
        link = crowd_store.insert_link(db, study.id, token, platform, clean,
                                       strict_ids=strict_ids)
        audit(db, actor, "crowd_link", study.name, link_id=link.id, platform=platform,
              rotated=revoked, strict_ids=strict_ids, **clean)
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


TAKEN = ("this participant ID has already started this study in another browser or tab; "
         "continue in the browser and tab you started in (or open the study again from "
         "there). If you cannot, contact the researcher through the platform")
FULL = "this study is full: it takes no more participants"
BUSY = "too many people are joining at this moment; please open the link again in a minute"


@dataclass(frozen=True, slots=True)
class _Visit:
    """What came of a visit (decided inside the join's transaction)."""

    outcome: str
    pid: str
    rater_id: int = 0
    name: str = ""
    token: str = ""


def link_study(db: Database, link_token: str) -> study_store.Study | None:
    """The study an open study link leads to (None for an unknown or closed link), read
    before joining: a study's screen requirements are checked before anyone joins."""
    link = crowd_store.link_for_token(db, link_token) if link_token else None
    return study_store.get_study_by_id(db, link.study_id) if link and link.active else None


def join(db: Database, link_token: str, params: Mapping[str, str], *,
         proof: str | Sequence[str] | None = None, client: str | None = None) -> Joined:
    """Sign up (or come back) through a study link (see the module doc).

    Args:
        proof: the personal token(s) the visitor's browser kept (its cookies), if any.
        client: the visitor's address (only a keyed hash is stored).

    Raises:
        AuthError: an unknown or closed link, or a participant the researcher revoked.
        PreviewError: an MTurk preview.
        JoinError: the participant id is missing or malformed; TakenError: the id started
            before and the visit brings no proof; LimitError: the study is full or too
            many are joining this minute. Nothing but the visit's log entry is stored.
    """
    link = crowd_store.link_for_token(db, link_token) if link_token else None
    if link is None:
        raise AuthError("this study link is not valid")
    if not link.active:
        raise AuthError("this study link has been closed")
    study = study_store.get_study_by_id(db, link.study_id)
    key = crowd_joins.client_key(db, client)
    try:
        pid = participant_id(link.platform, params, strict=link.strict_ids)
        sent = captured(link.platform, params)
    except PreviewError:
        raise
    except JoinError:
        with transaction(db):
            crowd_joins.log(db, study.id, link.id, None, key, "invalid")
        raise
    # A browser has one seat cookie per study it joined; a few are plenty.
    proofs = ([proof] if isinstance(proof, str) else [p for p in proof or () if p])[:_PROOFS]
    with transaction(db):
        visit = _visit(db, study, link, pid, sent, proofs, key)
        crowd_joins.log(db, study.id, link.id, visit.pid, key, visit.outcome)
    if visit.outcome == "refused":
        raise TakenError(TAKEN)
    if visit.outcome in ("full", "busy"):
        raise LimitError(FULL if visit.outcome == "full" else BUSY)
    return Joined(visit.rater_id, visit.name, visit.token, study.name, visit.outcome == "joined",
                  study.id)


def _visit(db: Database, study: study_store.Study, link: crowd_store.Link, pid: str | None,
           sent: dict[str, str], proofs: list[str], key: str | None) -> _Visit:
    if pid is not None:
        found = crowd_store.find_participant(db, study.id, link.platform, pid)
    else:  # platform "none" without an id: the browser's own participant, if it has one
        found = next((f for p in proofs
                      if (f := crowd_store.participant_by_token(db, study.id, p))), None)
    if found is None:
        return _first_visit(db, study, link, pid or anonymous_id(), sent, key)
    if rater_store.is_revoked(db, found.rater_id):
        raise AuthError("your participation in this study was ended by the researcher")
    token = _proven(db, link, found, sent, proofs)
    name = crowd_store.rater_name(found.platform, found.participant_id, study.id)
    if token is None:
        return _Visit("refused", found.participant_id, name=name)
    crowd_store.touch_participant(db, found.rater_id)
    crowd_joins.add_session(db, study.id, found.rater_id, link.id, sent, key)
    return _Visit("resumed", found.participant_id, found.rater_id, name, token)


def _proven(db: Database, link: crowd_store.Link, found: crowd_store.Participant,
            sent: dict[str, str], proofs: list[str]) -> str | None:
    """The token a returning participant goes on with: their own (the browser kept it),
    or a new one when they came back in a platform session they were seen in before (the
    old token cannot be given back: only its hash is stored). None: no proof."""
    for proof in proofs:
        if crowd_store.holds_token(db, found.rater_id, proof):
            return proof
    param = PLATFORMS[link.platform].session_param
    if param and sent.get(param) and crowd_joins.had_session(db, found.rater_id, param,
                                                              sent[param]):
        token = rater_store.new_token()
        rater_store.set_token(db, found.rater_id, token)
        return token
    return None


def _first_visit(db: Database, study: study_store.Study, link: crowd_store.Link, pid: str,
                 sent: dict[str, str], key: str | None) -> _Visit:
    cfg = CrowdSettings.of(study.settings)
    name = crowd_store.rater_name(link.platform, pid, study.id)
    if (cfg.max_participants is not None
            and crowd_store.participant_count(db, study.id) >= cfg.max_participants):
        return _Visit("full", pid, name=name)
    if (crowd_joins.joined_since(db, study.id, 60.0) >= cfg.joins_per_minute
            or (key is not None and crowd_joins.joined_since(db, study.id, 60.0, key)
                >= cfg.joins_per_client_per_minute)):
        return _Visit("busy", pid, name=name)
    rater = rater_store.ensure_rater(db, name)
    rater_store.add_to_study(db, rater.id, study.id)
    crowd_store.add_participant(db, study.id, link.platform, pid, rater.id, link.id, sent)
    crowd_joins.add_session(db, study.id, rater.id, link.id, sent, key)
    token = rater_store.new_token()
    rater_store.set_token(db, rater.id, token)
    audit(db, "crowd", "crowd_join", study.name, rater=name, link_id=link.id)
    return _Visit("joined", pid, rater.id, name, token)


def study_of_participant(db: Database, rater_id: int) -> int | None:
    """The study a rater joined through a study link, None for an invited rater."""
    found = crowd_store.participant_of(db, rater_id)
    return found.study_id if found is not None else None


def relink(db: Database, study_name: str, participant: str, base_url: str, *,
           actor: str = "cli") -> str:
    """A new personal link for a participant who lost their browser (another device,
    cookies cleared): the old token stops working at once. The researcher sends the link
    through the platform's messages, after checking who asks.

    Raises:
        NotFoundError: no such study, or no participant with this id in it.
        AuthError: the researcher ended this participant's participation.
    """
    study = study_store.get_study(db, study_name)
    found = next((f for pid in dict.fromkeys((participant, participant.lower(),
                                              participant.upper()))
                  if (f := crowd_store.find_participant_any(db, study.id, pid))), None)
    if found is None:
        raise NotFoundError(f"study {study.name!r} has no participant {participant!r}")
    if rater_store.is_revoked(db, found.rater_id):
        raise AuthError(f"participant {participant!r} was revoked; they stay out")
    token = rater_store.new_token()
    with transaction(db):
        rater_store.set_token(db, found.rater_id, token)
        audit(db, actor, "crowd_relink", study.name, participant=found.participant_id)
    return f"{base_url.rstrip('/')}/?token={token}"

"""Checks of a manifest against what it names: the crowd quota against the study's screens,
the practice pool against the gold file, and how the models' images look to raters
(sizes and file types; the ``display`` setting)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from concord import display as display_mod
from concord.check_settings import CheckSettings
from concord.crowd_settings import QUOTA_KEYS, study_units
from concord.errors import Problem
from concord.importers.images import ImageInfo
from concord.importers.manifest import Manifest
from concord.plan import GoldSpec

# The manifest word of each unit (``items_per_rater`` keys), for messages.
_SCREEN = {unit: key for key, unit in QUOTA_KEYS.items()}


def units(m: Manifest) -> tuple[str, ...]:
    """The units the study's raters work on."""
    return study_units(m.protocol, m.pairs.enabled)


def check_quotas(m: Manifest) -> list[Problem]:
    """A quota per screen must name exactly the screens the study has."""
    per = m.crowd.items_per_rater
    if not isinstance(per, dict):
        return []
    have = {_SCREEN[u] for u in units(m)}
    out = [Problem(str(m.path), f"the study has no {key} screen (its screens: "
                                f"{', '.join(sorted(have))})", field=f"crowd.items_per_rater.{key}")
           for key in sorted(set(per) - have)]
    out += [Problem(str(m.path), f"give the {key} screen a quota too (a rater finishes only "
                                 "when every screen's quota is done)",
                    field="crowd.items_per_rater") for key in sorted(have - set(per))]
    return out


def check_practice(m: Manifest, gold: list[GoldSpec]) -> list[Problem]:
    """A practice block is drawn from a pool of scoring gold images: there must be enough
    of them."""
    wanted = m.crowd.pool if m.crowd.practice_items else 0
    if not wanted:
        return []
    if m.protocol in ("rank", "pair"):
        return [Problem(str(m.path), "a practice block needs scoring gold images; "
                                     f"a {m.protocol} study has none (use protocol score "
                                     "or both)", field="crowd.practice")]
    have = len({(g.prompt_key, g.model, g.sample) for g in gold if g.unit == "image"})
    if have < wanted:
        where = f"the gold file has {have}" if m.gold else "the manifest has no 'gold' file"
        return [Problem(str(m.path), f"a practice pool of {wanted} item(s) needs as many "
                                     f"scoring gold images; {where}", field="crowd.practice")]
    return []


def gold_warnings(m: Manifest, gold: list[GoldSpec], gold_pairs: int) -> list[str]:
    """A quota below ``gold_every`` means some raters may meet no attention check."""
    every = CheckSettings.of({"quality": m.quality}).gold_every
    practice = m.crowd.pool if m.crowd.practice_items else 0
    has = {"image": sum(g.unit == "image" for g in gold) > practice,
           "prompt": any(g.unit == "prompt" for g in gold), "pair": gold_pairs > 0}
    out = []
    for unit in units(m):
        quota = m.crowd.quota(unit)
        if has[unit] and quota is not None and quota < every:
            out.append(f"the {_SCREEN[unit]} quota ({quota}) is below quality.gold_every "
                       f"({every}): a rater may finish without meeting a gold item there")
    return out


def study_display(m: Manifest, files: list[tuple[Any, str, Any, Path]],
                  infos: dict[Path, ImageInfo]) -> tuple[display_mod.Display | None,
                                                         list[str], dict[str, str]]:
    """The study's display setting, the warnings about it and each model's image sizes
    and file types (as text, for the import report)."""
    found = display_mod.appearances([(model, i.width, i.height, i.format)
                                     for _, model, _, f in files
                                     if (i := infos.get(f)) is not None])
    chosen = display_mod.resolve(m.display, found)
    return (chosen, display_mod.warnings(found, chosen),
            {model: a.text() for model, a in sorted(found.items())})

"""A ranking in progress: a pure value object, kept by the page and saved as a draft.

The ranking is a list of groups of image ids, best first (a group holds more than one
image only when ties are allowed), plus the order of the clicks, so Undo takes back the
last image ranked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(slots=True)
class RankingDraft:
    """Ordered groups of image ids (best first) and the click order."""

    groups: list[list[int]] = field(default_factory=list)
    picks: list[int] = field(default_factory=list)

    @classmethod
    def from_ranks(cls, ranks: Mapping[int, float]) -> RankingDraft:
        """The draft of a stored ranking (fractional ranks; equal ranks are one group)."""
        by_rank: dict[float, list[int]] = {}
        for image_id, rank in sorted(ranks.items(), key=lambda kv: (kv[1], kv[0])):
            by_rank.setdefault(rank, []).append(image_id)
        groups = [by_rank[r] for r in sorted(by_rank)]
        return cls(groups, [i for g in groups for i in g])

    @classmethod
    def from_json(cls, text: str, shown: list[int]) -> RankingDraft:
        """A saved draft, kept only if it still fits the images shown (else empty)."""
        try:
            data = json.loads(text)
            groups = [[int(i) for i in g] for g in data["groups"]]
            picks = [int(i) for i in data["picks"]]
        except (ValueError, KeyError, TypeError):
            return cls()
        flat = [i for g in groups for i in g]
        if len(flat) != len(set(flat)) or not set(flat) <= set(shown) or sorted(picks) != sorted(
                flat):
            return cls()
        return cls(groups, picks)

    def to_json(self) -> str:
        """The draft as saved in the database."""
        return json.dumps({"groups": self.groups, "picks": self.picks})

    @property
    def ranked(self) -> int:
        """How many images have a place."""
        return sum(len(g) for g in self.groups)

    def place_of(self, image_id: int) -> str | None:
        """The rank on an image's badge ("3", or "=2" for a tie), None if unranked."""
        place = 1
        for group in self.groups:
            if image_id in group:
                return f"={place}" if len(group) > 1 else str(place)
            place += len(group)
        return None

    def toggle(self, image_id: int, *, tie: bool = False) -> None:
        """A click on an image: give it the next rank (or share the last one when ``tie``),
        or, if it has a place, take it out and close the gap."""
        for group in self.groups:
            if image_id in group:
                group.remove(image_id)
                self.picks.remove(image_id)
                self.groups = [g for g in self.groups if g]
                return
        if tie and self.groups:
            self.groups[-1].append(image_id)
        else:
            self.groups.append([image_id])
        self.picks.append(image_id)

    def undo(self) -> None:
        """Take back the last image ranked."""
        if self.picks:
            self.toggle(self.picks[-1])

    def reset(self) -> None:
        """Clear the ranking."""
        self.groups, self.picks = [], []

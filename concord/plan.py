"""What an import wants the database to hold: plain, validated value objects.

Importers read files into a :class:`StudyPlan`; the store applies a plan in one
transaction. Nothing here touches the disk or the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# One question of a prompt is one type everywhere: the evaluator contract's (importers
# build it, the store keeps and reads it, evaluators score it).
from evaluators.base import Question

# What raters of a study do (manifest `protocol:`); a rubric's own protocol (score or rank:
# which screen it is for) is a different list, in the rubric checks.
STUDY_PROTOCOLS = ("score", "rank", "both", "pair")
# A rater who opens an item and leaves holds its slot this long; then others may take it.
DEFAULT_LEASE_MINUTES = 30


@dataclass(slots=True)
class PromptSpec:
    """One prompt with its benchmark metadata."""

    key: str
    text: str
    benchmark: str | None = None
    dimension: str | None = None
    skills: list[str] | None = None
    atom_count: int | None = None
    paraphrase_group: str | None = None
    variant: str | None = None
    source_image: str | None = None
    instruction: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    questions: list[Question] = field(default_factory=list)
    rank_set: bool = True


@dataclass(frozen=True, slots=True)
class ImageSpec:
    """One generated image; ``path`` is relative to the study root, None without a file."""

    prompt_key: str
    model: str
    sample: int = 0
    path: str | None = None
    sha256: str | None = None
    bytes: int | None = None
    width: int | None = None
    height: int | None = None


@dataclass(frozen=True, slots=True)
class GoldSpec:
    """An expected score for a gold (attention-check) image."""

    prompt_key: str
    model: str
    sample: int
    criterion: str
    expected: float
    tolerance: float = 0.0
    unit: str = "image"  # "prompt": a ranking gold (this image must get rank ``expected``)


@dataclass(frozen=True, slots=True)
class GoldPairSpec:
    """A gold pair: of two images of one prompt, ``better``'s is known to be better."""

    prompt_key: str
    better: str
    worse: str
    sample: int = 0


@dataclass(slots=True)
class StudyPlan:
    """Everything one manifest describes."""

    name: str
    protocol: str
    rubric: str | None
    root: str | None
    settings: dict[str, Any] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)
    prompts: list[PromptSpec] = field(default_factory=list)
    images: list[ImageSpec] = field(default_factory=list)
    gold: list[GoldSpec] = field(default_factory=list)
    gold_pairs: list[GoldPairSpec] = field(default_factory=list)
    # What the researcher should know (not errors), and each model's image sizes and file
    # types as text (the import report; concord.display).
    warnings: list[str] = field(default_factory=list)
    appearance: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class ImportSummary:
    """What applying a plan changed."""

    study: str
    created: bool = False
    models_added: int = 0
    prompts_added: int = 0
    questions_added: int = 0
    images_added: int = 0
    images_unchanged: int = 0
    gold_added: int = 0
    pairs_added: int = 0
    warnings: list[str] = field(default_factory=list)
    appearance: dict[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """True when anything was written."""
        return bool(
            self.created
            or self.models_added
            or self.prompts_added
            or self.questions_added
            or self.images_added
            or self.gold_added
            or self.pairs_added
        )

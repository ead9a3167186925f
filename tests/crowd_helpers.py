"""A small crowd study on disk: gold images, consent, a practice block, an item quota."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import make_folder_study

GOLD = ("prompt_id,model,criterion,expected,tolerance\n"
        "p0,m1,SC,1,0\np0,m1,PR,1,0\n"
        "p1,m1,SC,0,0\np1,m1,PR,0.5,0.5\n"
        "p2,m1,SC,2,0\n")
CROWD = """crowd:
  instructions: |
    # How to rate
    Look at the image, then the prompt.
  consent: I agree that my answers are used for research.
  practice:
    items: 2
    pass_threshold: 0.5
  items_per_rater: {quota}
  hourly_rate: 12.0
  currency: GBP
  idle_cap_seconds: 300
"""


def make_crowd_study(root: Path, *, quota: int = 4, prompts: int = 5, practice: int = 2,
                     threshold: float = 0.5, k: int = 3) -> Path:
    """A score study of ``prompts`` × (m1, m2) with three gold images of m1 (p0 to p2) and
    a ``crowd`` block; returns the manifest path."""
    crowd = (CROWD.format(quota=quota).replace("items: 2", f"items: {practice}")
             .replace("pass_threshold: 0.5", f"pass_threshold: {threshold}"))
    manifest = make_folder_study(root, prompts=prompts, models=("m1", "m2"), k=k,
                                 extra="gold: gold.csv\n" + crowd)
    (root / "gold.csv").write_text(GOLD, encoding="utf-8")
    return manifest


QUESTIONNAIRE = """questionnaire:
  before:
    - id: age
      kind: number
      text: How old are you?
      required: true
      min: 18
      max: 120
      integer: true
    - id: colour_vision
      kind: single
      text: Do you have a colour vision deficiency?
      options: ["No", "Yes", "I do not know"]
      required: true
    - id: device
      kind: multiple
      text: Which devices do you look at images on?
      options: [Phone, Laptop, Desktop monitor]
  after:
    - id: ai_help
      kind: single
      text: Did you use AI help?
      options: ["No", "Yes"]
      required: true
    - id: confidence
      kind: likert
      text: How confident are you in your ratings?
      points: 5
      low: not at all
      high: very
    - id: feedback
      kind: text
      text: Anything to tell us?
      max_length: 500
"""

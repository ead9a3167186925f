"""PairComp (FocusDiff): the judge's yes/no ratio for "does this image match the caption".

The user turn is [image, text] with the text exactly as PairComp's evaluation script sends
it after the image placeholder's newline: a leading space, the caption in double quotes,
lower-case "please", no final period. The score is
``S = P({yes, Yes, YES}) / (P({yes, Yes, YES}) + P({no, No, NO}))`` at the first answer
position, rounded to 4 decimals per image (the reference rounds before aggregating).

PairComp reads ``generate(do_sample=True).scores[0]``: logits after the legacy default
top-k(50) warper, so a token outside the top 50 counts 0 (``top_k=50``, the default here;
``top_k=None`` uses the full vocabulary). Its generate() runs on ``inputs_embeds``, so no
repetition penalty applies. If all six tokens fall outside the top k the ratio is 0/0 and
the image is stored as an error, as the reference would produce NaN.

Study layout: prompts ``X_Y`` with meta ``pair`` (X) and ``caption`` (Y), images
``X_Y_Z.png`` with sample Z; the stats module averages the 4 images of a pair.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from evaluators.base import ScoreRequest
from evaluators.vlm_metric import Query, Read, VLMMetric

if TYPE_CHECKING:
    import torch

    from evaluators.token_probs import Processing

# The internvl2_5 conversation template's default system message (the reference judge's);
# a converted checkpoint's chat template may not add it: pass system="internvl2_5".
INTERNVL2_5_SYSTEM = ("你是书生·万象，英文名是InternVL，"
                      "是由上海人工智能实验室、清华大学及多家合作单位联合开发的多模态大语言模型。")
QUESTION = ' Does this image match the description "{}", please directly respond with yes or no'
YES_WORDS = ("yes", "Yes", "YES")
NO_WORDS = ("no", "No", "NO")
DECIMALS = 4


class PairComp(VLMMetric):
    """PairComp per-image score S in [0, 1], rounded to 4 decimals.

    Args:
        top_k: the reference's top-k warper (50); None reads the full vocabulary.
        system: system message; ``"internvl2_5"`` = the reference template's default.
        **kwargs: backend options of :class:`VLMMetric`.
    """

    name: ClassVar[str] = "paircomp"
    # The reference judge, OpenGVLab/InternVL2_5-26B, is a remote-code checkpoint; give a
    # transformers-native (-hf) conversion, or that id with --trust-remote-code.
    default_model: ClassVar[str | None] = None

    def __init__(self, model: str | None = None, *, top_k: int | None = 50,
                 system: str | None = None, **kwargs: Any) -> None:
        if system == "internvl2_5":
            system = INTERNVL2_5_SYSTEM
        super().__init__(model, system=system, **kwargs)
        if top_k is not None and top_k < 1:
            raise ValueError(f"top_k must be >= 1 or None, got {top_k}")
        self.top_k = top_k

    def processing(self) -> Processing:
        """Top-k(50) as the reference's sampling warper (or none)."""
        from evaluators.token_probs import Processing

        return Processing(top_k=self.top_k)

    def queries(self, request: ScoreRequest) -> list[Query]:
        """One query per image, on the caption (the prompt text)."""
        return [Query("", QUESTION.format(request.prompt))]

    def read(self, logprobs: torch.Tensor, context: str, query: Query,
             request: ScoreRequest) -> Read:
        """The yes/no ratio from the processed scores, rounded to 4 decimals."""
        return paircomp_read(self.backend, logprobs, context, request)


def paircomp_read(backend: Any, logprobs: torch.Tensor, context: str,
                  request: ScoreRequest) -> Read:
    """S for one image from its next-token log-probs (ids of each word after ``context``)."""
    from evaluators.token_probs import prob_sum, unique, yes_ratio

    def ids(words: tuple[str, ...]) -> list[int]:
        # a set of distinct vocabulary entries, as the reference's piece lookups are
        return unique([backend.first_token_id(context, backend.spaced(context, w))
                       for w in words])

    yes_ids, no_ids = ids(YES_WORDS), ids(NO_WORDS)
    raw = yes_ratio(logprobs, yes_ids, no_ids)
    details: dict[str, Any] = {
        "raw": raw, "p_yes": prob_sum(logprobs, yes_ids), "p_no": prob_sum(logprobs, no_ids),
        "yes_ids": yes_ids, "no_ids": no_ids,
        "pair": request.extra.get("pair"), "caption": request.extra.get("caption"),
    }
    if raw != raw:  # NaN: every yes/no token was cut by top-k
        details["raw"] = None  # JSON has no NaN
        details["error"] = "no yes/no token among the top-k next tokens (0/0)"
        return Read(None, details)
    return Read(round(raw, DECIMALS), details)

"""One backend for every Hugging Face image-text-to-text VLM (Qwen2.5/3-VL, InternVL-hf,
LLaVA family, Idefics3/SmolVLM, PaliGemma ...): prompts, batching, next-token and
teacher-forced answer log-probabilities.

Batches are left-padded and carry the attention mask, so the last column is every row's
next-token position; only that position's logits are computed (``logits_to_keep``); the
softmax runs in fp32 under ``torch.inference_mode()``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from evaluators.hf_loading import load_pretrained, resolve_device
from evaluators.token_probs import Processing, process_logits, seen_tokens

Loader = Callable[[], tuple[Any, Any]]

# Processors that take one list of images per prompt (a flat list is rejected)
_NESTED_IMAGES = ("Idefics3Processor", "Idefics2Processor", "SmolVLMProcessor")
# Per-token inputs besides input_ids/attention_mask; an appended answer token is text (0),
# except that PaliGemma's token_type_ids mark its causal "suffix" (the answer) with 1.
_PER_TOKEN_KEYS = ("token_type_ids", "mm_token_type_ids")
_SUFFIX_TYPE_1 = ("PaliGemmaProcessor",)


class HFVLMBackend:
    """Scores (image, question) pairs with one Hugging Face VLM.

    Args:
        model: hub id or local folder; also the ``judge`` string stored with scores.
        device: ``auto``, ``cuda``, ``cuda:N`` or ``cpu``.
        batch_size: (image, question) pairs per forward pass.
        loader: returns ``(model, processor)``; default ``from_pretrained(model)``.
        trust_remote_code: allow checkpoints that run their own code.
        dtype: weight dtype for the default loader (bf16 on GPU, fp32 on CPU).
    """

    def __init__(self, model: str, *, device: str = "auto", batch_size: int = 8,
                 loader: Loader | None = None, trust_remote_code: bool = False,
                 dtype: torch.dtype | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model_id = model
        self.device_name = device
        self.batch_size = batch_size
        self._loader = loader
        self._trust_remote_code = trust_remote_code
        self._dtype = dtype
        self._model: Any = None
        self._processor: Any = None
        self._token_cache: dict[tuple[str, str], list[int]] = {}

    # ----------------------------------------------------------------- loading
    def load(self) -> None:
        """Load the model and processor once (injected loader or ``from_pretrained``)."""
        if self._model is not None:
            return
        if self._loader is not None:
            model, processor = self._loader()
        else:
            model, processor = load_pretrained(
                self.model_id, device=resolve_device(self.device_name), dtype=self._dtype,
                trust_remote_code=self._trust_remote_code)
        processor.tokenizer.padding_side = "left"  # last column = next-token position
        self._model, self._processor = model.eval(), processor

    @property
    def model(self) -> Any:
        """The loaded model (loads on first use)."""
        self.load()
        return self._model

    @property
    def processor(self) -> Any:
        """The loaded processor (loads on first use)."""
        self.load()
        return self._processor

    @property
    def tokenizer(self) -> Any:
        """The processor's tokenizer."""
        return self.processor.tokenizer

    def generation_repetition_penalty(self) -> float:
        """The checkpoint's ``generation_config.repetition_penalty`` (1.0 when unset)."""
        config = getattr(self.model, "generation_config", None)
        return float(getattr(config, "repetition_penalty", None) or 1.0)

    # ----------------------------------------------------------------- prompts
    def render(self, question: str, system: str | None = None) -> tuple[str, str]:
        """(text for the processor, text the answer follows) for one image + question.

        With a chat template: an optional system turn, the user turn [image, question] and
        the generation prompt (no system turn: the template's own default, if any).
        PaliGemma has none: its processor adds the image tokens and BOS and appends ``\\n``.
        Other template-less models (BLIP-2) get ``Question: ... Answer:``.
        """
        proc = self.processor
        if getattr(proc, "chat_template", None):
            messages: list[dict[str, Any]] = [
                {"role": "user", "content": [{"type": "image"},
                                             {"type": "text", "text": question}]}]
            if system is not None:
                messages.insert(0, {"role": "system", "content": system})
            text = proc.apply_chat_template(messages, add_generation_prompt=True)
            return text, text
        if type(proc).__name__ == "PaliGemmaProcessor":
            image_token = getattr(proc, "image_token", "<image>")
            return image_token + question, question + "\n"
        text = f"Question: {question} Answer:"
        return text, text

    @staticmethod
    def spaced(context: str, word: str) -> str:
        """``word`` as the model would write it after ``context``: a space unless the
        context already ends in whitespace (``ASSISTANT:`` → " Yes"; ``assistant\\n`` → "Yes")."""
        return word if not context or context[-1].isspace() else " " + word

    def answer_token_ids(self, context: str, answer: str) -> list[int]:
        """Token ids of ``answer`` as it continues ``context``.

        Encodes context and context+answer (no special tokens) and keeps what follows the
        context, so leading-space conventions come out as the model sees them. If the two
        merge across the boundary, the answer is encoded alone.
        """
        key = (context, answer)
        if key not in self._token_cache:
            if len(self._token_cache) > 50_000:
                self._token_cache.clear()
            tok = self.tokenizer
            ctx = tok(context, add_special_tokens=False).input_ids
            full = tok(context + answer, add_special_tokens=False).input_ids
            if full[: len(ctx)] == ctx and len(full) > len(ctx):
                ids = full[len(ctx):]
            else:
                ids = tok(answer, add_special_tokens=False).input_ids
            if not ids:
                raise ValueError(f"answer {answer!r} encodes to no tokens")
            self._token_cache[key] = list(ids)
        return self._token_cache[key]

    def first_token_id(self, context: str, answer: str) -> int:
        """The first token the model would emit for ``answer`` after ``context``."""
        return self.answer_token_ids(context, answer)[0]

    def decode(self, token_id: int) -> str:
        """One token id as text (e.g. the argmax answer TIFA compares)."""
        return self.tokenizer.decode([token_id])

    # ----------------------------------------------------------------- scoring
    def encode(self, images: Sequence[Any], texts: Sequence[str]) -> Any:
        """Processor inputs for a batch, on the model's device, left-padded."""
        proc = self.processor
        imgs: list[Any] = list(images)
        if type(proc).__name__ in _NESTED_IMAGES:
            imgs = [[im] for im in imgs]
        inputs = proc(images=imgs, text=list(texts), padding=True, return_tensors="pt")
        inputs.pop("labels", None)  # PaliGemmaProcessor always adds labels
        inputs = inputs.to(self.model.device)
        for key, value in inputs.items():
            if torch.is_tensor(value) and value.is_floating_point():
                inputs[key] = value.to(self.model.dtype)
        return inputs

    def next_token_logprobs(self, images: Sequence[Any], texts: Sequence[str],
                            processing: Processing | None = None) -> torch.Tensor:
        """[N, V] fp32 log-probabilities (CPU) of the token after each (image, text)."""
        processing = processing or Processing()
        if len(images) != len(texts):
            raise ValueError(f"{len(images)} images for {len(texts)} texts")
        out = []
        for start in range(0, len(texts), self.batch_size):
            stop = start + self.batch_size
            out.append(self._next_token_batch(images[start:stop], texts[start:stop],
                                              processing))
        return torch.cat(out) if out else torch.empty(0)

    @torch.inference_mode()
    def _next_token_batch(self, images: Sequence[Any], texts: Sequence[str],
                          processing: Processing) -> torch.Tensor:
        inputs = self.encode(images, texts)
        logits = self.model(**inputs, logits_to_keep=1).logits[:, -1, :].float()
        seen = None
        if processing.repetition_penalty != 1.0:
            seen = seen_tokens(inputs["input_ids"], inputs["attention_mask"], logits.shape[-1])
        return torch.log_softmax(process_logits(logits, seen, processing), dim=-1).cpu()

    def answer_logprobs(self, images: Sequence[Any], texts: Sequence[str],
                        answers: Sequence[Sequence[int]],
                        processing: Processing | None = None) -> list[list[float]]:
        """Teacher forcing: log P of each answer token, the answer appended to the prompt.

        ``answers[i]`` are token ids (see :meth:`answer_token_ids`). Step j is read with
        the answer's first j tokens in the input, processed as generate would at that step
        (the repetition penalty also covers the answer tokens already emitted).
        """
        processing = processing or Processing()
        if not len(images) == len(texts) == len(answers):
            raise ValueError(f"{len(images)} images, {len(texts)} texts, {len(answers)} answers")
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            stop = start + self.batch_size
            out += self._answer_batch(images[start:stop], texts[start:stop],
                                      answers[start:stop], processing)
        return out

    @torch.inference_mode()
    def _answer_batch(self, images: Sequence[Any], texts: Sequence[str],
                      answers: Sequence[Sequence[int]],
                      processing: Processing) -> list[list[float]]:
        fill = {"token_type_ids": int(type(self.processor).__name__ in _SUFFIX_TYPE_1)}
        inputs = _append_tokens(self.encode(images, texts), answers,
                                self.tokenizer.pad_token_id or 0, fill)
        n_max = max(len(a) for a in answers)
        logits = self.model(**inputs, logits_to_keep=n_max + 1).logits.float()
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        seen = seen_tokens(ids[:, : ids.shape[1] - n_max], mask[:, : ids.shape[1] - n_max],
                           logits.shape[-1])
        result: list[list[float]] = [[] for _ in answers]
        for j in range(n_max):
            # column j of the kept logits predicts the token at position L - n_max + j
            target = ids[:, ids.shape[1] - n_max + j]
            lp = torch.log_softmax(process_logits(logits[:, j], seen, processing), dim=-1)
            for i, ans in enumerate(answers):
                k = j - (n_max - len(ans))  # index within row i's answer (rows are aligned)
                if k >= 0:
                    result[i].append(float(lp[i, target[i]]))
            seen[torch.arange(len(answers)), target] |= mask[:, ids.shape[1] - n_max + j].bool()
        return result


def _append_tokens(inputs: Any, answers: Sequence[Sequence[int]], pad_id: int,
                   fill: dict[str, int]) -> Any:
    """Append each row's answer ids after its real tokens and re-pad on the left.

    Other per-token inputs get ``fill[key]`` (default 0) at the answer positions.
    """
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    rows = []
    for i, ans in enumerate(answers):
        real = mask[i].bool()
        tail = torch.tensor(list(ans), dtype=ids.dtype, device=ids.device)
        extra = {k: torch.full_like(tail, fill.get(k, 0)) for k in _PER_TOKEN_KEYS
                 if k in inputs}
        rows.append((ids[i][real], tail, {k: inputs[k][i][real] for k in extra}, extra))
    width = max(len(r[0]) + len(r[1]) for r in rows)
    new_ids = torch.full((len(rows), width), pad_id, dtype=ids.dtype, device=ids.device)
    new_mask = torch.zeros_like(new_ids, dtype=mask.dtype)
    per_token = {k: torch.zeros_like(new_ids, dtype=inputs[k].dtype) for k in rows[0][3]}
    for i, (real, tail, own, extra) in enumerate(rows):
        n = len(real) + len(tail)
        new_ids[i, width - n:] = torch.cat([real, tail])
        new_mask[i, width - n:] = 1
        for k in per_token:
            per_token[k][i, width - n:] = torch.cat([own[k], extra[k]])
    inputs["input_ids"], inputs["attention_mask"] = new_ids, new_mask
    inputs.update(per_token)
    return inputs

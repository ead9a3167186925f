"""One backend for every Hugging Face image-text-to-text VLM (Qwen2.5/3-VL, InternVL-hf,
LLaVA family, Idefics3/SmolVLM, PaliGemma ...): prompts, batching, next-token and
teacher-forced answer log-probabilities.

Two paths give the same numbers (fp32: within 1e-4): the unshared one (``hf_flat``: each
(image, text) pair a row of a left-padded batch) and the shared-image-prefix one
(``hf_prefix``: system + image prefilled once per image, its questions run as one batch on
the expanded KV cache). ``hf_batches`` plans the micro-batches, prepares the next ones on a
worker thread and halves the batch on out-of-memory. Softmax in fp32 under
``torch.inference_mode()``.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import torch

from evaluators import hf_batches, hf_flat, hf_memory, hf_prefix
from evaluators.base import PairError
from evaluators.hf_loading import load_pretrained, resolve_device
from evaluators.token_probs import Processing

Loader = Callable[[], tuple[Any, Any]]
logger = logging.getLogger(__name__)
_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


class HFVLMBackend:
    """Scores (image, question) pairs with one Hugging Face VLM.

    Args:
        model: hub id or local folder; also the ``judge`` string stored with scores.
        device: ``auto``, ``cuda``, ``cuda:N`` or ``cpu``.
        batch_size: (image, question) pairs per forward pass, or ``"auto"`` (from the free
            memory once the model is loaded; halved on out-of-memory either way).
        loader: returns ``(model, processor)``; default ``from_pretrained(model)``.
        trust_remote_code: allow checkpoints that run their own code.
        dtype: weight dtype for the default loader (bf16 on GPU, fp32 on CPU).
        share_prefix: prefill each image once for all its questions where the model allows.
        device_map: ``"auto"`` spreads a judge too big for one GPU over all visible ones.
        max_memory: per-device limits for ``device_map`` (``{0: "70GiB", "cpu": "200GiB"}``).
    """

    def __init__(self, model: str, *, device: str = "auto", batch_size: int | str = 8,
                 loader: Loader | None = None, trust_remote_code: bool = False,
                 dtype: torch.dtype | str | None = None, share_prefix: bool = True,
                 device_map: str | None = None,
                 max_memory: dict[Any, str] | None = None) -> None:
        self._auto_batch = batch_size == "auto"
        if not self._auto_batch and (not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be >= 1 or 'auto', got {batch_size!r}")
        self.model_id = model
        self.device_name = device
        self.batch_size = 8 if self._auto_batch else int(batch_size)
        self.prefetch = 2  # batches prepared ahead of the one the model runs
        self.counters: Counter[str] = Counter()
        self.processor_lock = threading.Lock()
        self.prefix_verified = False
        self._loader = loader
        if isinstance(dtype, str):
            dtype = None if dtype == "auto" else _DTYPES[dtype]
        self._load_options: dict[str, Any] = {
            "trust_remote_code": trust_remote_code, "dtype": dtype,
            "device_map": device_map, "max_memory": max_memory}
        self._share_reason: str | None = None if share_prefix else "switched off"
        self._model: Any = None
        self._processor: Any = None
        self._token_cache: dict[tuple[str, str], list[int]] = {}
        self._prefixes: dict[str | None, str | None] = {}
        self._suffix_cache: dict[str, tuple[str, list[int]] | None] = {}

    # ----------------------------------------------------------------- loading
    def load(self) -> None:
        """Load the model and processor once (injected loader or ``from_pretrained``)."""
        if self._model is not None:
            return
        if self._loader is not None:
            model, processor = self._loader()
        else:
            model, processor = load_pretrained(
                self.model_id, device=resolve_device(self.device_name), **self._load_options)
        processor.tokenizer.padding_side = "left"  # last column = next-token position
        self._model, self._processor = model.eval(), processor
        if self._share_reason is None:
            self._share_reason = hf_prefix.unsupported_reason(model, processor)
        if self._share_reason is not None:
            logger.info("%s: no shared image prefix (%s)", self.model_id, self._share_reason)

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
        text, context = self._render(question, system)
        if self._share_reason is None and system not in self._prefixes:
            sentinel, _ = self._render(hf_prefix.SENTINEL, system)
            self._prefixes[system] = hf_prefix.prefix_of(sentinel, self.processor.image_token)
        return text, context

    def _render(self, question: str, system: str | None) -> tuple[str, str]:
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


    # ----------------------------------------------------------------- sharing
    @property
    def share_reason(self) -> str | None:
        """Why the image prefix is not shared (None: it is, where an image has 2+ texts)."""
        self.load()
        return self._share_reason

    def disable_sharing(self, reason: str) -> None:
        """Switch the shared-prefix path off for good (logged once)."""
        if self._share_reason is None:
            logger.warning("%s: shared image prefix switched off: %s", self.model_id, reason)
        self._share_reason = reason

    def split_prefix(self, text: str) -> tuple[str, list[int]] | None:
        """(prefix, suffix ids) of a rendered prompt that can share its image prefix."""
        if self.share_reason is not None:
            return None
        if text not in self._suffix_cache:
            if len(self._suffix_cache) > 50_000:
                self._suffix_cache.clear()
            found = None
            for prefix in self._prefixes.values():
                if prefix is not None and text.startswith(prefix):
                    with self.processor_lock:
                        ids = hf_prefix.suffix_ids(self.tokenizer, prefix, text)
                    found = None if ids is None else (prefix, ids)
                    break
            self._suffix_cache[text] = found
        return self._suffix_cache[text]

    # ----------------------------------------------------------------- scoring
    def encode(self, images: Sequence[Any], texts: Sequence[str]) -> Any:
        """Processor inputs for a batch, on the model's device, left-padded."""
        return hf_flat.to_device(self, hf_flat.process(self, images, texts))

    def next_token_results(self, images: Sequence[Any], texts: Sequence[str],
                           processing: Processing | None = None) -> list[Any]:
        """Per (image, text): the [V] fp32 log-probabilities (CPU) of the next token, or a
        :class:`~evaluators.base.PairError` where the processor refused the image."""
        if len(images) != len(texts):
            raise ValueError(f"{len(images)} images for {len(texts)} texts")
        return self._score(images, texts, None, processing)

    def next_token_logprobs(self, images: Sequence[Any], texts: Sequence[str],
                            processing: Processing | None = None) -> torch.Tensor:
        """[N, V] fp32 log-probabilities (CPU) of the token after each (image, text).

        Raises:
            ValueError: the processor refused an image (its reason).
        """
        out = self.next_token_results(images, texts, processing)
        refused = next((r for r in out if isinstance(r, PairError)), None)
        if refused is not None:
            raise ValueError(refused.reason)
        return torch.stack(out) if out else torch.empty(0)

    def answer_logprobs(self, images: Sequence[Any], texts: Sequence[str],
                        answers: Sequence[Sequence[int]],
                        processing: Processing | None = None) -> list[list[float]]:
        """Teacher forcing: log P of each answer token, the answer appended to the prompt.

        ``answers[i]`` are token ids (see :meth:`answer_token_ids`). Step j is read with
        the answer's first j tokens in the input, processed as generate would at that step
        (the repetition penalty also covers the answer tokens already emitted). A pair whose
        image the processor refused gets a :class:`~evaluators.base.PairError` instead.
        """
        if not len(images) == len(texts) == len(answers):
            raise ValueError(f"{len(images)} images, {len(texts)} texts, {len(answers)} answers")
        if any(len(a) == 0 for a in answers):
            raise ValueError("an answer with no tokens cannot be teacher-forced")
        return self._score(images, texts, answers, processing)

    def _score(self, images: Sequence[Any], texts: Sequence[str],
               answers: Sequence[Sequence[int]] | None,
               processing: Processing | None) -> list[Any]:
        if not texts:
            return []
        self._resolve_batch_size(images, texts)
        pairs = [hf_batches.Pair(i, im, t, None if answers is None else tuple(answers[i]))
                 for i, (im, t) in enumerate(zip(images, texts, strict=True))]
        results = hf_batches.run(self, hf_batches.plan(self, pairs), processing or Processing())
        return [results[i] for i in range(len(pairs))]

    def _resolve_batch_size(self, images: Sequence[Any], texts: Sequence[str]) -> None:
        """``batch_size="auto"``: measure one prompt's length, size batches to free memory."""
        if not self._auto_batch:
            return
        for image, text in zip(images, texts, strict=True):
            try:
                tokens = int(hf_flat.process(self, [image], [text])["input_ids"].shape[1])
                break
            except Exception as exc:  # a refused image fails later, alone; measure another
                logger.debug("batch size not measured on a refused image: %s", exc)
        else:
            return  # no image processes: every pair fails, the batch size does not matter
        self._auto_batch = False
        self.batch_size = hf_memory.auto_batch_size(self.model, tokens)
        logger.info("%s: %d pairs per forward (%d tokens per prompt, free memory on %s)",
                    self.model_id, self.batch_size, tokens, self.model.device)

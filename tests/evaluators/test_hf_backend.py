"""The Hugging Face backend on tiny random-weight models loaded through from_pretrained."""

from __future__ import annotations

import json

import pytest
import torch

from evaluators.base import ModelLoadError
from evaluators.hf_backend import HFVLMBackend
from evaluators.hf_loading import load_pretrained, resolve_device
from evaluators.token_probs import Processing
from tests.support.tiny_models import build_tiny_vlm

ARCHS = ("llava", "qwen2_5_vl", "qwen3_vl", "idefics3", "paligemma")
QUESTIONS = ['Does this figure show "a red cube"? Please answer Yes or No.',
             "Is the text 'drink' in the image?",
             "How many pigs are in the image? Answer in one word."]


def _texts(backend, questions=QUESTIONS):
    return [backend.render(q) for q in questions]


@pytest.mark.parametrize("arch", ARCHS)
def test_loads_as_image_text_to_text_model_with_left_padding(backends, arch):
    backend = backends[arch]
    assert "ForConditionalGeneration" in type(backend.model).__name__
    assert backend.tokenizer.padding_side == "left"
    assert not backend.model.training


@pytest.mark.parametrize("arch", ARCHS)
def test_batch_equals_one_at_a_time(backends, image_maker, arch):
    backend = backends[arch]
    images = [image_maker(i) for i in range(3)]  # different sizes -> padding in the batch
    texts = [t for t, _ in _texts(backend)]
    batch = backend.next_token_logprobs(images, texts)
    single = torch.cat([backend.next_token_logprobs([im], [t])
                        for im, t in zip(images, texts, strict=True)])
    assert batch.shape == single.shape
    assert torch.allclose(batch, single, atol=1e-5)
    assert torch.allclose(batch.exp().sum(-1), torch.ones(3), atol=1e-4)


@pytest.mark.parametrize("arch", ARCHS)
def test_save_load_round_trip_keeps_scores(backends, image_maker, arch):
    in_memory = HFVLMBackend("in-memory", loader=lambda: build_tiny_vlm(arch, seed=0))
    loaded = backends[arch]
    text = loaded.render(QUESTIONS[0])[0]
    a = in_memory.next_token_logprobs([image_maker(1)], [text])
    b = loaded.next_token_logprobs([image_maker(1)], [text])
    assert torch.allclose(a, b, atol=1e-5)


@pytest.mark.parametrize(("arch", "token"), [
    ("qwen2_5_vl", "Yes"),   # ChatML ends with "assistant\n": no space before the answer
    ("paligemma", "Yes"),    # the processor appends "\n" to the prompt
    ("llava", "ĠYes"),       # "ASSISTANT:" -> the model writes " Yes"
    ("idefics3", "ĠYes"),    # "Assistant:" -> " Yes"
])
def test_yes_token_follows_the_template(backends, arch, token):
    backend = backends[arch]
    _, context = backend.render(QUESTIONS[0])
    yes = backend.first_token_id(context, backend.spaced(context, "Yes"))
    no = backend.first_token_id(context, backend.spaced(context, "No"))
    assert backend.tokenizer.convert_ids_to_tokens(yes) == token
    assert yes != no


def test_space_digit_starts_with_the_bare_space_token(backends):
    backend = backends["qwen2_5_vl"]
    _, context = backend.render(QUESTIONS[2])
    ids = backend.answer_token_ids(context, " 4")
    assert backend.tokenizer.convert_ids_to_tokens(ids) == ["Ġ", "4"]


def _step_logprob(backend, image, text, prefix, target):
    """log P(target | prompt + prefix) from one plain forward pass (built by hand)."""
    inputs = backend.encode([image], [text])
    extra = torch.tensor([prefix], dtype=inputs["input_ids"].dtype)
    inputs["input_ids"] = torch.cat([inputs["input_ids"], extra], 1)
    inputs["attention_mask"] = torch.cat([inputs["attention_mask"], torch.ones_like(extra)], 1)
    for key, fill in (("token_type_ids", 1), ("mm_token_type_ids", 0)):
        if key in inputs:
            inputs[key] = torch.cat([inputs[key], torch.full_like(extra, fill)], 1)
    with torch.inference_mode():
        logits = backend.model(**inputs).logits[0, -1].float()
    return torch.log_softmax(logits, -1)[target].item()


@pytest.mark.parametrize("arch", ARCHS)
def test_teacher_forcing_equals_product_of_step_probabilities(backends, image_maker, arch):
    backend = backends[arch]
    text, context = backend.render(QUESTIONS[0])
    answer = backend.answer_token_ids(context, backend.spaced(context, "red cube on a table"))
    assert len(answer) > 1
    forced = backend.answer_logprobs([image_maker(2)], [text], [answer])[0]
    steps = [_step_logprob(backend, image_maker(2), text, answer[:k], answer[k])
             for k in range(len(answer))]
    assert forced == pytest.approx(steps, abs=1e-4)
    product = torch.tensor(steps).exp().prod().item()
    assert torch.tensor(forced).sum().exp().item() == pytest.approx(product, rel=1e-4)


@pytest.mark.parametrize("arch", ["qwen2_5_vl", "paligemma"])
def test_teacher_forcing_batch_with_unequal_answers(backends, image_maker, arch):
    backend = backends[arch]
    pairs = _texts(backend)
    texts = [t for t, _ in pairs]
    answers = [backend.answer_token_ids(c, a) for (_, c), a in
               zip(pairs, ["Yes", "red cube", " four pigs on a table"], strict=True)]
    images = [image_maker(i) for i in range(3)]
    batch = backend.answer_logprobs(images, texts, answers, Processing(repetition_penalty=1.2))
    single = [backend.answer_logprobs([im], [t], [a], Processing(repetition_penalty=1.2))[0]
              for im, t, a in zip(images, texts, answers, strict=True)]
    for b, s, a in zip(batch, single, answers, strict=True):
        assert len(b) == len(a)
        assert b == pytest.approx(s, abs=1e-5)


@pytest.mark.parametrize("arch", ARCHS)
def test_forced_first_token_equals_next_token(backends, image_maker, arch):
    """Also shows the appended answer does not leak into the prompt (PaliGemma's prefix
    attends bidirectionally; the answer must be marked as its causal suffix)."""
    backend = backends[arch]
    text, context = backend.render(QUESTIONS[0])
    answer = backend.answer_token_ids(context, backend.spaced(context, "Yes it is red"))
    yes = answer[0]
    forced = backend.answer_logprobs([image_maker(0)], [text], [answer])[0][0]
    direct = backend.next_token_logprobs([image_maker(0)], [text])[0, yes].item()
    assert forced == pytest.approx(direct, abs=1e-5)


@pytest.mark.parametrize("arch", ["llava", "qwen2_5_vl", "paligemma"])
def test_processed_scores_equal_generate_scores(backends, image_maker, arch):
    """Greedy generate() with a repetition penalty, and sampling's top-k, read the same."""
    backend = backends[arch]
    text = backend.render(QUESTIONS[0])[0]
    image = image_maker(3)
    inputs = backend.encode([image], [text])
    with torch.inference_mode():
        greedy = backend.model.generate(**inputs, max_new_tokens=1, do_sample=False,
                                        repetition_penalty=1.3, output_scores=True,
                                        return_dict_in_generate=True).scores[0]
        sampled = backend.model.generate(**inputs, max_new_tokens=1, do_sample=True, top_k=7,
                                         top_p=1.0, temperature=1.0, output_scores=True,
                                         return_dict_in_generate=True).scores[0]
    ours = backend.next_token_logprobs([image], [text], Processing(repetition_penalty=1.3))
    assert torch.allclose(ours, torch.log_softmax(greedy.float(), -1), atol=1e-5)
    ours_k = backend.next_token_logprobs([image], [text], Processing(top_k=7))
    ref_k = torch.log_softmax(sampled.float(), -1)
    assert torch.equal(torch.isfinite(ours_k), torch.isfinite(ref_k))
    kept = torch.isfinite(ref_k)
    assert torch.allclose(ours_k[kept], ref_k[kept], atol=1e-5)


def test_injected_loader_is_called_once():
    calls = []

    def loader():
        calls.append(1)
        return build_tiny_vlm("llava")

    backend = HFVLMBackend("my-judge", loader=loader)
    backend.load()
    backend.load()
    assert backend.model is not None
    assert calls == [1]
    assert backend.model_id == "my-judge"


def test_bf16_weights_score_close_to_fp32(tiny_dirs, image_maker, backends):
    model, processor = load_pretrained(str(tiny_dirs["llava"]), device=torch.device("cpu"),
                                       dtype=torch.bfloat16)
    assert model.dtype == torch.bfloat16
    bf16 = HFVLMBackend("bf16", loader=lambda: (model, processor))
    text = backends["llava"].render(QUESTIONS[0])[0]
    a = bf16.next_token_logprobs([image_maker(0)], [text]).exp()
    b = backends["llava"].next_token_logprobs([image_maker(0)], [text]).exp()
    assert a.dtype == torch.float32  # the softmax runs in fp32 whatever the weights
    assert (a - b).abs().max().item() < 0.01


def test_missing_local_path_is_one_clear_line():
    with pytest.raises(ModelLoadError, match=r"model path '/no/such/model' does not exist"):
        load_pretrained("/no/such/model", device=torch.device("cpu"))


def test_uncached_hub_id_offline_is_one_clear_line():
    with pytest.raises(ModelLoadError) as info:
        load_pretrained("concord-test/not-a-model", device=torch.device("cpu"))
    message = str(info.value)
    assert "not found locally and HF_HUB_OFFLINE=1" in message
    assert "\n" not in message


def test_remote_code_checkpoint_needs_explicit_trust(tmp_path):
    config = {"model_type": "internvl_chat", "architectures": ["InternVLChatModel"],
              "auto_map": {"AutoConfig": "configuration_internvl_chat.InternVLChatConfig",
                           "AutoModel": "modeling_internvl_chat.InternVLChatModel"}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match=r"remote code.*--trust-remote-code"):
        load_pretrained(str(tmp_path), device=torch.device("cpu"))
    with pytest.raises(ModelLoadError, match="cannot load model"):
        load_pretrained(str(tmp_path), device=torch.device("cpu"), trust_remote_code=True)


def test_cuda_without_gpu_is_refused():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ModelLoadError, match="no CUDA device"):
        resolve_device("cuda")
    assert resolve_device("auto").type == "cpu"


def test_mismatched_lengths_are_rejected(backends, image_maker):
    with pytest.raises(ValueError, match="1 images for 2 texts"):
        backends["llava"].next_token_logprobs([image_maker(0)], ["a", "b"])

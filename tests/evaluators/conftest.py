"""Fixtures for the evaluator tests: offline tiny VLMs, test images, a tiny study.

The hub is switched off before transformers can be imported, so an accidental hub id fails
in seconds instead of minutes of DNS retries.
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import hashlib
import importlib.util
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

REPO = Path(__file__).resolve().parents[2]
TINY_ARCHS = ("llava", "qwen2_5_vl", "qwen3_vl", "idefics3", "paligemma")
# What the tests here build their tiny judges with (requirements-metrics.txt). Where one is
# missing, every module but these skips with the reason instead of failing to import.
METRICS_PACKAGES = ("torch", "transformers")
WITHOUT_METRICS_PACKAGES = ("test_registry.py",)
MISSING = [m for m in METRICS_PACKAGES if importlib.util.find_spec(m) is None]


class _NeedsMetricsPackages(pytest.Module):
    """A test module collected where torch or transformers is missing: skipped, with why."""

    def collect(self):
        pytest.skip(f"needs the metrics packages ({', '.join(MISSING)} not installed): "
                    "pip install -r requirements-metrics.txt")


def pytest_pycollect_makemodule(module_path, parent):
    if MISSING and module_path.name not in WITHOUT_METRICS_PACKAGES:
        return _NeedsMetricsPackages.from_parent(parent, path=module_path)
    return None


def make_image(seed: int, size: tuple[int, int] = (64, 48)) -> Image.Image:
    """A small deterministic RGB image that differs by seed (size varies too)."""
    w, h = size[0] + 8 * (seed % 4), size[1]
    im = Image.new("RGB", (w, h), ((37 * seed) % 256, 120, (200 - 11 * seed) % 256))
    ImageDraw.Draw(im).rectangle([4, 4, 4 + 6 * (seed % 5), 20], fill=(10, 10, 10))
    return im


@pytest.fixture(scope="session", autouse=True)
def _quiet_transformers():
    if MISSING:
        return
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory) -> dict[str, Path]:
    """Each tiny architecture saved with save_pretrained into its own folder."""
    from tests.support.tiny_models import save_tiny_vlm

    root = tmp_path_factory.mktemp("tiny-vlms")
    return {arch: save_tiny_vlm(arch, root / arch) for arch in TINY_ARCHS}


@pytest.fixture(scope="session")
def backends(tiny_dirs):
    """One loaded backend per architecture, through the production from_pretrained path."""
    from evaluators.hf_backend import HFVLMBackend

    out = {}
    for arch, folder in tiny_dirs.items():
        backend = HFVLMBackend(str(folder), device="cpu", batch_size=4)
        backend.load()
        out[arch] = backend
    return out


@pytest.fixture(scope="session")
def image_files(tmp_path_factory) -> list[Path]:
    """Five PNG files of different sizes."""
    root = tmp_path_factory.mktemp("images")
    paths = []
    for i in range(5):
        path = root / f"img{i}.png"
        make_image(i).save(path)
        paths.append(path)
    return paths


def write_study(db, root: Path, name: str = "tiny", *, n_prompts: int = 3, n_models: int = 2,
                corrupt: int | None = None, questions: bool = True):
    """A study of n_prompts × n_models PNGs under ``root`` (one corrupt file if asked)."""
    from concord.plan import ImageSpec, PromptSpec, Question, StudyPlan
    from concord.store.studies import apply_plan

    root.mkdir(parents=True, exist_ok=True)
    prompts, images, models = [], [], [f"m{j}" for j in range(n_models)]
    for p in range(n_prompts):
        qs = [Question("0", "How many cats are in the image?", "two", "count"),
              Question("1", "Is the cat red?", "Yes", "attribute")] if questions else []
        prompts.append(PromptSpec(key=f"p{p}", text=f"a red cube number {p}", questions=qs,
                                  paraphrase_group=f"g{p % 2}", dimension="abstract"))
        for j, model in enumerate(models):
            rel = f"{model}/p{p}.png"
            (root / model).mkdir(exist_ok=True)
            n = len(images)
            if n == corrupt:
                (root / rel).write_bytes(b"\x89PNG\r\n\x1a\n this is not a png")
            else:
                make_image(p * 7 + j).save(root / rel)
            sha = hashlib.sha256((root / rel).read_bytes()).hexdigest()
            images.append(ImageSpec(prompt_key=f"p{p}", model=model, path=rel, sha256=sha))
    plan = StudyPlan(name=name, protocol="score", rubric=None, root=str(root), models=models,
                     prompts=prompts, images=images)
    return apply_plan(db, plan)


@pytest.fixture(scope="session")
def image_maker():
    """The deterministic test-image function (fixtures rather than conftest imports)."""
    return make_image


@pytest.fixture
def study_maker():
    """``write_study(db, root, ...)`` for tests that need a study in a database."""
    return write_study


def pytest_configure(config):
    # PaliGemma's processor builds its (unused) labels with np.array(copy=False) semantics
    config.addinivalue_line("filterwarnings",
                            "ignore:__array__ implementation:DeprecationWarning")

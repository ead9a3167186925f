"""A study's labels as a Hugging Face ``datasets`` dataset (``export --format hf``).

The folder holds, per configuration (``ratings``, ``rankings``, ``pairs``, ``adjudications``,
``questionnaire`` (the answers to the study's questions, kept apart from the labels) and,
with images, ``images``; only those with rows):

- ``data/<config>.parquet``: Parquet with the declared ``Features`` in its schema, read by
  ``load_dataset("parquet", data_files=...)`` or by the Hub through the card's ``configs``;
- ``arrow/<config>/``: ``Dataset.save_to_disk``, read by ``load_from_disk``;
- ``README.md``: the dataset card (YAML header with configs and features; the rubric,
  rater counts and agreement in the text).

Model names, criteria and pair outcomes are ``ClassLabel``s; scores, ranks and seconds
``float64``. Images (optional) are a ``datasets.Image`` column of their own configuration,
one row per image, in the metadata-free bytes raters are shown and without a file name
(file names often name the model). ``datasets`` is imported only here, lazily.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from concord import atomic
from concord.errors import ConcordError

OUTCOMES = ["left", "right", "tie", "both_bad"]
_TOP = {"README.md", "data", "arrow"}

# Columns of each configuration: name -> kind ("str", "int", "float", or a ClassLabel
# list key: "models", "criteria", "outcomes").
SCHEMAS: dict[str, dict[str, str]] = {
    "ratings": {"prompt_id": "str", "prompt": "str", "dimension": "str", "model": "models",
                "sample": "int", "rater": "str", "criterion": "criteria", "value": "float",
                "seconds": "float", "time": "str"},
    "rankings": {"prompt_id": "str", "prompt": "str", "dimension": "str", "model": "models",
                 "sample": "int", "rater": "str", "criterion": "str", "rank": "float",
                 "position": "int", "seconds": "float", "time": "str"},
    "pairs": {"prompt_id": "str", "prompt": "str", "dimension": "str", "rater": "str",
              "criterion": "str", "left_model": "models", "right_model": "models",
              "outcome": "outcomes", "seconds": "float", "time": "str"},
    "adjudications": {"unit": "str", "prompt_id": "str", "model": "str", "sample": "int",
                      "model_a": "str", "model_b": "str", "criterion": "str",
                      "value": "float", "ranking": "str", "outcome": "str", "note": "str",
                      "actor": "str", "time": "str"},
    "images": {"prompt_id": "str", "model": "models", "sample": "int", "image": "image"},
    "questionnaire": {"rater": "str", "participant_id": "str", "part": "str",
                      "question": "str", "kind": "str", "text": "str", "answer": "str",
                      "answer_json": "str", "revision": "int", "time": "str"},
}


def datasets_module() -> Any:
    """``import datasets``, or a ConcordError that says how to install it."""
    try:
        import datasets
    except ImportError as exc:
        raise ConcordError("the Hugging Face export needs the 'datasets' package: "
                           "pip install datasets") from exc
    return datasets


def features(config: str, labels: Mapping[str, list[str]]) -> Any:
    """The ``datasets.Features`` of a configuration; ``labels`` gives the ClassLabel names
    (``models``, ``criteria``; ``outcomes`` is fixed)."""
    ds = datasets_module()
    names = {**labels, "outcomes": OUTCOMES}
    out = {}
    for col, kind in SCHEMAS[config].items():
        if kind in names:
            out[col] = ds.ClassLabel(names=list(names[kind]))
        elif kind == "image":
            out[col] = ds.Image()
        else:
            out[col] = ds.Value({"str": "string", "int": "int64", "float": "float64"}[kind])
    return ds.Features(out)


def _records(config: str, frame: pd.DataFrame) -> dict[str, list]:
    """The frame's columns of ``config`` as Python lists (missing values as None)."""
    out: dict[str, list] = {}
    for col, kind in SCHEMAS[config].items():
        values = frame[col] if col in frame else pd.Series([None] * len(frame))
        values = values.astype(object).where(values.notna(), None).tolist()
        if kind == "int":
            values = [None if v is None else int(v) for v in values]
        elif kind == "float":
            values = [None if v is None else float(v) for v in values]
        elif kind in ("str",) or kind in ("models", "criteria", "outcomes"):
            values = [None if v is None else str(v) for v in values]
        out[col] = values
    return out


def build(frames: Mapping[str, pd.DataFrame], labels: Mapping[str, list[str]]) -> dict:
    """``{config: datasets.Dataset}`` for the frames that have rows."""
    ds = datasets_module()
    return {name: ds.Dataset.from_dict(_records(name, frame), features=features(name, labels))
            for name, frame in frames.items() if len(frame)}


def write(directory: Path, sets: Mapping[str, Any], card: str) -> list[str]:
    """Write the dataset folder atomically (built beside, swapped in); returns the
    configurations written. A folder that holds anything but a previous export (README.md,
    data/, arrow/) is refused rather than replaced."""
    directory = Path(directory)
    stranger = _not_an_export(directory)
    if stranger is not None:
        raise ConcordError(f"{directory} holds {stranger.name}, which is not part of a Hugging "
                           "Face export; choose a new or empty folder (the export replaces "
                           "the whole folder)")
    with atomic.building_dir(directory) as tmp:
        (tmp / "data").mkdir()
        for name, dataset in sets.items():
            dataset.to_parquet(str(tmp / "data" / f"{name}.parquet"))
            dataset.save_to_disk(str(tmp / "arrow" / name))
        (tmp / "README.md").write_text(card, encoding="utf-8")
    return list(sets)


def _not_an_export(directory: Path) -> Path | None:
    if not directory.is_dir():
        return None
    for entry in sorted(directory.iterdir()):
        if entry.name not in _TOP or entry.is_symlink():
            return entry
    return None


def _feature_yaml(feature: Any) -> Any:
    ds = datasets_module()
    if isinstance(feature, ds.ClassLabel):
        return {"class_label": {"names": {str(i): n for i, n in enumerate(feature.names)}}}
    if isinstance(feature, ds.Image):
        return "image"
    return feature.dtype


def card_header(sets: Mapping[str, Any], *, pretty_name: str) -> str:
    """The card's YAML header: ``configs`` (Parquet files; ``ratings`` or the first is the
    default) and ``dataset_info`` (features and row counts) of each configuration."""
    default = "ratings" if "ratings" in sets else next(iter(sets), None)
    configs, info = [], []
    for name, dataset in sets.items():
        entry = {"config_name": name,
                 "data_files": [{"split": "train", "path": f"data/{name}.parquet"}]}
        if name == default:
            entry["default"] = True
        configs.append(entry)
        info.append({"config_name": name,
                     "features": [{"name": col, "dtype": _feature_yaml(f)}
                                  for col, f in dataset.features.items()],
                     "splits": [{"name": "train", "num_examples": len(dataset)}]})
    head = {"pretty_name": pretty_name, "tags": ["human-evaluation", "text-to-image", "concord"],
            "configs": configs, "dataset_info": info}
    return "---\n" + yaml.safe_dump(head, sort_keys=False, allow_unicode=True) + "---\n"

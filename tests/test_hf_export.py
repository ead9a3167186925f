"""Hugging Face export: datasets read back the exact labels, declared features, the card,
images without metadata, atomic and refusing folders it did not write."""

from __future__ import annotations

import sys

import pandas as pd
import pytest
import yaml

from concord.cli import main
from concord.errors import ConcordError
from concord.services import adjudication, studies
from concord.services.exports import hf_dataset, labels
from concord.services.labelling import ranking, rating
from concord.services.labelling.common import new_submission
from tests.foundation_helpers import invited, make_folder_study
from tests.helpers import target_of
from tests.metadata_images import NAME, png_with_everything
from tests.pair_helpers import seed_pair_study

datasets = pytest.importorskip("datasets", reason="pip install datasets (requirements-dev)")
pytestmark = pytest.mark.both_engines


@pytest.fixture
def study(db, tmp_path):
    """'hf': 3 prompts x 2 models, both protocols; raters disagree on SC."""
    manifest = make_folder_study(tmp_path / "hf", prompts=3, protocol="both", k=3)
    # The image files carry the model's name in their metadata; the export must not.
    (tmp_path / "hf" / "images" / "m1" / "p0.png").write_bytes(png_with_everything())
    studies.import_manifest(db, manifest)
    for n, name in enumerate(("ann", "ben", "cat")):
        rid = invited(db, "hf", name)
        while (item := rating.next_item(db, "hf", rid)) is not None:
            rating.submit(db, "hf", rid, item.image_id, {"SC": n % 2, "PR": 0.5},
                          submission=new_submission())
        while (rank_set := ranking.next_set(db, "hf", rid)) is not None:
            ranking.submit(db, "hf", rid, rank_set, [[im.image_id] for im in rank_set.images])
    return db


def _decoded(ds, column: str) -> list:
    feature = ds.features[column]
    if isinstance(feature, datasets.ClassLabel):
        return [feature.int2str(v) for v in ds[column]]
    return list(ds[column])


def _same_rows(ds, frame: pd.DataFrame, columns: list[str]) -> None:
    assert len(ds) == len(frame)
    for col in columns:
        assert _decoded(ds, col) == frame[col].tolist(), col


def test_both_readers_get_back_exactly_the_labels(study, tmp_path):
    out = tmp_path / "out"
    made = hf_dataset.export_hf(study, "hf", out)
    assert made == ["ratings", "rankings"]
    ratings = labels.ratings(study, "hf")
    rankings = labels.rankings(study, "hf")
    cols = ["prompt_id", "prompt", "model", "sample", "rater", "criterion", "value"]
    from_disk = datasets.load_from_disk(str(out / "arrow" / "ratings"))
    from_parquet = datasets.load_dataset(
        "parquet", data_files={"train": str(out / "data" / "ratings.parquet")},
        cache_dir=str(tmp_path / "cache"))["train"]
    for ds in (from_disk, from_parquet):
        assert isinstance(ds.features["model"], datasets.ClassLabel)
        assert ds.features["model"].names == ["m1", "m2"]
        assert ds.features["criterion"].names == ["PR", "SC"]
        assert ds.features["value"] == datasets.Value("float64")
        _same_rows(ds, ratings, cols)
    ranked = datasets.load_from_disk(str(out / "arrow" / "rankings"))
    _same_rows(ranked, rankings, ["prompt_id", "model", "rater", "criterion", "rank"])


def test_card_declares_configs_features_rubric_raters_and_agreement(study, tmp_path):
    out = tmp_path / "out"
    hf_dataset.export_hf(study, "hf", out)
    text = (out / "README.md").read_text()
    head = yaml.safe_load(text.split("---\n")[1])
    configs = {c["config_name"]: c for c in head["configs"]}
    assert configs["ratings"]["data_files"] == [{"split": "train",
                                                 "path": "data/ratings.parquet"}]
    assert configs["ratings"]["default"] is True
    info = {i["config_name"]: i for i in head["dataset_info"]}
    feats = {f["name"]: f["dtype"] for f in info["ratings"]["features"]}
    assert feats["model"] == {"class_label": {"names": {"0": "m1", "1": "m2"}}}
    assert feats["value"] == "float64"
    assert info["ratings"]["splits"] == [{"name": "train", "num_examples": 36}]  # 6 x 3 x 2
    body = text.split("---\n", 2)[2]
    assert "| SC |" in body and "Krippendorff" in body
    assert "ratings: 3 raters, 36 rows" in body
    assert "Kendall's W" in body


def test_images_are_an_image_feature_without_metadata(study, tmp_path):
    out = tmp_path / "out"
    assert "images" in hf_dataset.export_hf(study, "hf", out, with_images=True)
    images = datasets.load_from_disk(str(out / "arrow" / "images"))
    assert isinstance(images.features["image"], datasets.Image)
    assert len(images) == 6
    raw = images.cast_column("image", datasets.Image(decode=False))
    blobs = [r["bytes"] for r in raw["image"]]
    assert all(r["path"] is None for r in raw["image"])
    assert all(NAME.encode() not in b for b in blobs)
    assert images[0]["image"].size == (56, 40)  # the metadata image decodes
    parquet = (out / "data" / "images.parquet").read_bytes()
    assert NAME.encode() not in parquet


def test_pairs_and_adjudications_are_configs(db, tmp_path):
    seed_pair_study(db, tmp_path, prompts=2, scores=False)
    top = adjudication.queue(db, "duel", "pair")[0]
    adjudication.set_value(db, "duel", "pair", top["item_id"], top["criterion"], "tie")
    out = tmp_path / "out"
    assert hf_dataset.export_hf(db, "duel", out) == ["pairs", "adjudications"]
    pairs = datasets.load_from_disk(str(out / "arrow" / "pairs"))
    frame = labels.pair_judgments(db, "duel")
    _same_rows(pairs, frame, ["rater", "left_model", "right_model", "outcome"])
    assert pairs.features["outcome"].names == ["left", "right", "tie", "both_bad"]
    adj = datasets.load_from_disk(str(out / "arrow" / "adjudications"))
    assert adj["outcome"] == ["tie"] and adj["unit"] == ["pair"]


def test_export_replaces_its_own_folder_and_refuses_others(study, tmp_path):
    out = tmp_path / "out"
    hf_dataset.export_hf(study, "hf", out, with_images=True)
    hf_dataset.export_hf(study, "hf", out)  # a second export replaces the first whole
    assert not (out / "arrow" / "images").exists()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("keep me")
    with pytest.raises(ConcordError, match=r"thesis\.tex"):
        hf_dataset.export_hf(study, "hf", mine)
    assert (mine / "thesis.tex").read_text() == "keep me"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_missing_datasets_package_says_how_to_install(study, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ConcordError, match="pip install datasets"):
        hf_dataset.export_hf(study, "hf", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli_writes_the_dataset(study, tmp_path, capsys):
    db_file = target_of(study)
    out = tmp_path / "cli"
    assert main(["--db", db_file, "export", "--study", "hf", "--format", "hf", "-o", str(out),
                 "--with-images"]) == 0
    assert (out / "data" / "images.parquet").is_file()
    assert main(["--db", db_file, "export", "--study", "hf", "--format", "hf"]) == 1
    assert "needs -o" in capsys.readouterr().err

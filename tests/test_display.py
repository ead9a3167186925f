"""Images that do not give the model away: the study's ``display`` serves every image at one
size and in one file type (Lanczos, a PNG whose length depends only on its size); the import
reports each model's sizes and file types, turns it on when they differ, and exports say
how raters saw the images."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps

from concord.errors import InputError
from concord.normalise import normalise
from concord.services import studies
from concord.services.exports import labels
from concord.services.labelling import rating
from concord.services.media import display_size, served_image
from concord.store import raters as rater_store
from tests.helpers import ROOT
from tests.metadata_images import (
    FORMS,
    jpeg_with_everything,
    png_with_everything,
    webp_with_everything,
)

pytestmark = pytest.mark.both_engines


def reference(data: bytes, size: int) -> np.ndarray:
    """What the normalised pixels must be, computed here with Pillow alone: upright, RGB
    over white, the longer side ``size`` with the Lanczos filter."""
    with Image.open(io.BytesIO(data)) as im:
        im = ImageOps.exif_transpose(im)
        if "A" in im.getbands():
            rgba = im.convert("RGBA")
            flat = Image.new("RGB", rgba.size, (255, 255, 255))
            flat.paste(rgba, mask=rgba.getchannel("A"))
            im = flat
        im = im.convert("RGB")
        w, h = im.size
        target = (round(w * size / max(w, h)), round(h * size / max(w, h)))
        return np.asarray(im.resize(target, Image.Resampling.LANCZOS))


def decoded(data: bytes) -> tuple[np.ndarray, str, str]:
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im.convert("RGB")), im.format, im.mode


SOURCES = {
    "png-256": png_with_everything(size=(256, 256)),
    "jpeg-512": jpeg_with_everything(size=(512, 512)),
    "jpeg-rotated": jpeg_with_everything(orientation=6, size=(300, 200)),
    "webp-rgba": webp_with_everything(size=(300, 300)),
    "png-rgba": png_with_everything(mode="RGBA", size=(128, 128)),
    "png-grey": png_with_everything(mode="L", size=(1024, 1024)),
}


@pytest.mark.parametrize("name", list(SOURCES))
def test_normalised_pixels_are_the_lanczos_resize_of_the_original(name):
    data = SOURCES[name]
    out = normalise(data, 512)
    pixels, fmt, mode = decoded(out.data)
    assert (fmt, mode, out.format) == ("PNG", "RGB", "PNG")
    assert np.array_equal(pixels, reference(data, 512))
    assert not any(form in out.data for form in FORMS)  # no metadata survives
    chunks = []
    pos = 8
    while pos < len(out.data):
        length = int.from_bytes(out.data[pos:pos + 4], "big")
        chunks.append(out.data[pos + 4:pos + 8])
        pos += 12 + length
    assert set(chunks) == {b"IHDR", b"IDAT", b"IEND"}


def test_length_depends_on_the_size_only_not_on_the_content():
    """A compressed PNG's length tells how busy a picture is (a smooth, upscaled model
    compresses better): the normalised files of one size all have one length."""
    flat = io.BytesIO()
    Image.new("RGB", (256, 256), (10, 20, 30)).save(flat, "PNG")
    lengths = {len(normalise(d, 512).data) for d in
               [flat.getvalue(), SOURCES["png-256"], SOURCES["jpeg-512"], SOURCES["webp-rgba"]]}
    assert len(lengths) == 1


def write_models(root: Path, files: dict[str, tuple[str, bytes]], prompts: int = 3) -> None:
    for model, (ext, data) in files.items():
        (root / "images" / model).mkdir(parents=True, exist_ok=True)
        for i in range(prompts):
            (root / "images" / model / f"p{i}.{ext}").write_bytes(data)
    with (root / "prompts.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["prompt_id", "prompt"])
        w.writerows([[f"p{i}", f"prompt {i}"] for i in range(prompts)])


def mixed_study(tmp_path: Path, extra: str = "", name: str = "mixed") -> Path:
    """One model at 256 px PNG, one at 512 px JPEG, one at 512 px PNG."""
    root = tmp_path / name
    write_models(root, {"small": ("png", png_with_everything(size=(256, 256))),
                        "jpeg": ("jpg", jpeg_with_everything(size=(512, 512))),
                        "big": ("png", png_with_everything(size=(512, 512)))})
    manifest = root / "study.yaml"
    manifest.write_text(f"name: {name}\nprotocol: pair\nlayout: folder\nroot: images\n"
                        f"prompts: prompts.csv\nraters_per_item: 2\n{extra}", encoding="utf-8")
    return manifest


def test_import_reports_sizes_and_types_per_model_and_turns_display_on(db, tmp_path):
    summary = studies.import_manifest(db, mixed_study(tmp_path))
    assert summary.appearance == {"big": "512×512 (3); PNG (3)",
                                  "jpeg": "512×512 (3); JPEG (3)",
                                  "small": "256×256 (3); PNG (3)"}
    assert any("differ in size or file type" in w and "512 px PNG" in w
               for w in summary.warnings)
    assert any("small are upscaled to 512 px" in w for w in summary.warnings)
    assert studies.get(db, "mixed").settings["display"] == {"size": 512, "format": "png",
                                                            "auto": True}


def test_display_false_keeps_the_images_as_generated_and_warns(db, tmp_path):
    summary = studies.import_manifest(db, mixed_study(tmp_path, "display: false\n"))
    assert "display" not in studies.get(db, "mixed").settings
    assert any("raters can tell the models apart" in w for w in summary.warnings)


def test_models_that_look_alike_need_no_display(db, tmp_path):
    root = tmp_path / "same"
    data = png_with_everything(size=(64, 64))
    write_models(root, {"a": ("png", data), "b": ("png", data)})
    (root / "study.yaml").write_text("name: same\nprotocol: score\nlayout: folder\nroot: "
                                     "images\nprompts: prompts.csv\n", encoding="utf-8")
    summary = studies.import_manifest(db, root / "study.yaml")
    assert summary.warnings == [] and "display" not in studies.get(db, "same").settings


@pytest.mark.parametrize(("value", "needle"), [
    ("display: {size: 8}", "display.size"), ("display: {size: 512, format: jpeg}",
                                             "display.format"),
    ("display: {size: 512, fit: crop}", "display.fit"), ("display: 512", "display"),
])
def test_bad_display_settings_name_the_key(db, tmp_path, value, needle):
    with pytest.raises(InputError, match=needle.replace(".", r"\.")):
        studies.import_manifest(db, mixed_study(tmp_path, value + "\n"))


def test_no_two_models_can_be_told_apart_by_what_is_served(db, tmp_path):
    """Size, file type and byte length of every served image of a study with display are
    the same whatever the model; the originals stay untouched."""
    manifest = mixed_study(tmp_path, "display: {size: 384, format: png}\n")
    originals = {p: p.read_bytes() for p in (manifest.parent / "images").rglob("*.*")}
    studies.import_manifest(db, manifest)
    size = display_size(db, "mixed")
    served = [served_image(p, tmp_path / "cache", size=size) for p in originals]
    assert {(s.width, s.format, len(s.data)) for s in served} == {
        (384, "PNG", len(served[0].data))}
    for path, data in originals.items():
        assert path.read_bytes() == data
        assert np.array_equal(decoded(served_image(path, size=size).data)[0],
                              reference(data, 384))
    # the cache keeps the normalised copy apart from the metadata-stripped one
    assert served_image(next(iter(originals)), tmp_path / "cache").format in ("PNG", "JPEG")


def test_the_demo_study_is_normalised(db):
    studies.import_manifest(db, ROOT / "data" / "demo" / "study.yaml")
    assert display_size(db, "demo") == 512


def test_exports_record_how_raters_saw_the_images(db, tmp_path):
    """Two models of 64 and 32 px: display is chosen at import (64 px PNG), and every
    labels row says so."""
    root = tmp_path / "plain"
    write_models(root, {"a": ("png", png_with_everything(size=(64, 64))),
                        "b": ("png", png_with_everything(size=(32, 32)))}, prompts=1)
    (root / "study.yaml").write_text("name: plain\nprotocol: score\nlayout: folder\nroot: "
                                     "images\nprompts: prompts.csv\n", encoding="utf-8")
    studies.import_manifest(db, root / "study.yaml")
    studies.invite(db, "plain", ["bo"], "http://x")
    bo = rater_store.get_rater(db, "bo").id
    item = rating.next_item(db, "plain", bo)
    rating.submit(db, "plain", bo, item.image_id, {"SC": 1.0, "PR": 1.0},
                  submission=item.submission)
    text = labels.export_bytes(db, "plain", "csv").decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {r["display"] for r in rows} == {"64px png"}

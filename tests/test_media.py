"""Blinding: images reach raters without any metadata, pixels unchanged, originals untouched."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from concord.media import strip_metadata
from concord.services.media import served_image
from tests.metadata_images import (
    FORMS,
    NAME,
    base_image,
    idat_chunks,
    jpeg_with_everything,
    pixels,
    png_chunk,
    png_with_everything,
    webp_with_everything,
)


def _assert_blind(original: bytes, clean: bytes) -> None:
    assert NAME.encode() in original  # the fixture really carries the name
    for form in FORMS:
        assert form not in clean
    assert np.array_equal(pixels(clean), pixels(original))


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L"])
def test_png_text_exif_xmp_icc_and_c2pa_are_dropped_pixels_kept(mode):
    original = png_with_everything(mode)
    clean = strip_metadata(original)
    assert clean.format == "PNG"
    _assert_blind(original, clean.data)
    for chunk in (b"tEXt", b"zTXt", b"iTXt", b"eXIf", b"iCCP", b"caBX", b"tIME"):
        assert chunk not in clean.data
    # the pixel data was not re-compressed: the IDAT chunks are the original bytes
    assert idat_chunks(clean.data) == idat_chunks(original)


def test_a_name_hidden_after_the_compressed_pixels_forces_a_re_encode():
    out = io.BytesIO()
    base_image().save(out, "PNG")
    png = out.getvalue()
    at = png.index(b"IDAT")
    length = struct.unpack(">I", png[at - 4:at])[0]
    body = png[at + 4:at + 4 + length] + NAME.encode()  # bytes after the zlib stream
    doctored = png[:at - 4] + png_chunk(b"IDAT", body) + png[at + 8 + length:]
    clean = strip_metadata(doctored)
    _assert_blind(doctored, clean.data)


@pytest.mark.parametrize("orientation", [1, 6])
def test_jpeg_app_segments_and_comments_are_dropped_without_re_encoding(orientation):
    original = jpeg_with_everything(orientation)
    clean = strip_metadata(original)
    assert clean.format == "JPEG"
    _assert_blind(original, clean.data)
    scan = original.index(b"\xff\xda")
    assert original[scan:original.rindex(b"\xff\xd9")] in clean.data  # same entropy data
    with Image.open(io.BytesIO(clean.data)) as im:
        kept = dict(im.getexif())
    # only a non-default orientation survives, so the browser still shows it upright
    assert kept == ({} if orientation == 1 else {0x0112: orientation})


def test_webp_becomes_a_lossless_png_without_metadata():
    original = webp_with_everything()
    clean = strip_metadata(original)
    assert clean.format == "PNG"
    _assert_blind(original, clean.data)


def test_unparseable_containers_are_re_encoded_not_passed_through():
    out = io.BytesIO()
    base_image().save(out, "PNG")
    broken = out.getvalue()[:-12]  # no IEND: the chunk walk fails, the decoder does not
    broken_tail = broken + png_chunk(b"tEXt", b"Model\0" + NAME.encode())[:10]
    with pytest.raises(OSError):
        strip_metadata(broken_tail)  # not decodable either: an error, never the raw bytes


def test_served_images_are_cached_and_originals_untouched(tmp_path: Path):
    path = tmp_path / "m.png"
    path.write_bytes(png_with_everything())
    before = path.read_bytes()
    cache = tmp_path / "cache"
    first = served_image(path, cache)
    assert path.read_bytes() == before
    assert len(list(cache.iterdir())) == 1
    again = served_image(path, cache)
    assert again.data == first.data and again.width == 56
    # a replaced file is cleaned again (the cache key includes size and mtime)
    out = io.BytesIO()
    base_image("L").save(out, "PNG")
    path.write_bytes(out.getvalue())
    assert served_image(path, cache).data != first.data

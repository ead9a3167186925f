"""Blinding: images reach raters without any metadata, pixels unchanged, originals untouched."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, PngImagePlugin

from concord.media import strip_metadata
from concord.services.media import served_image

NAME = "SecretModel-XL"
FORMS = [NAME.encode(), NAME.encode("utf-16-le"), NAME.encode("utf-16-be")]


def _pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im.convert("RGBA"))


def _base(mode: str = "RGB") -> Image.Image:
    rng = np.random.default_rng(1)
    channels = {"RGB": 3, "RGBA": 4, "L": 1}[mode]
    arr = (rng.random((40, 56, channels)) * 255).astype(np.uint8)
    return Image.fromarray(arr.squeeze() if channels == 1 else arr, mode)


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(
        ">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def _idat(png: bytes) -> bytes:
    """The raw IDAT chunks of a PNG, in order."""
    out, pos = b"", 8
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        if kind == b"IDAT":
            out += png[pos:pos + 12 + length]
        pos += 12 + length
    return out


def _insert_before_iend(png: bytes, *chunks: bytes) -> bytes:
    at = png.rindex(b"IEND") - 4
    return png[:at] + b"".join(chunks) + png[at:]


def _png_with_everything(mode: str = "RGB") -> bytes:
    info = PngImagePlugin.PngInfo()
    info.add_text("parameters", f"a cat\nSteps: 20, Model: {NAME}")
    info.add_text("Software", NAME, zip=True)
    info.add_itxt("Description", f"made by {NAME}", lang="en", tkey="Beschreibung")
    exif = Image.Exif()
    exif[0x0131] = NAME
    out = io.BytesIO()
    _base(mode).save(out, "PNG", pnginfo=info, exif=exif.tobytes(),
                     icc_profile=b"\0" * 40 + NAME.encode())
    xmp = f'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf>{NAME}</rdf></x:xmpmeta>'.encode()
    c2pa = b"jumb" + b"c2pa.manifest " + NAME.encode()
    return _insert_before_iend(
        out.getvalue(), _png_chunk(b"iTXt", b"XML:com.adobe.xmp\0\0\0\0\0" + xmp),
        _png_chunk(b"caBX", c2pa), _png_chunk(b"tIME", b"\x07\xea\x0b\x17\x0c\x00\x00"))


def _jpeg_segment(marker: int, body: bytes) -> bytes:
    return bytes((0xFF, marker)) + struct.pack(">H", len(body) + 2) + body


def _jpeg_with_everything(orientation: int = 1) -> bytes:
    exif = Image.Exif()
    exif[0x0131] = NAME
    exif[0x010E] = f"prompt: a cat, model {NAME}"
    exif[0x0112] = orientation
    out = io.BytesIO()
    _base().save(out, "JPEG", quality=90, exif=exif.tobytes(), comment=NAME.encode(),
                 icc_profile=b"\0" * 40 + NAME.encode())
    data = out.getvalue()
    xmp = _jpeg_segment(0xE1, b"http://ns.adobe.com/xap/1.0/\0<x>" + NAME.encode() + b"</x>")
    jumbf = _jpeg_segment(0xEB, b"JP\0\x01\0\0\0\x01jumbc2pa" + NAME.encode())
    photoshop = _jpeg_segment(0xED, b"Photoshop 3.0\0" + NAME.encode("utf-16-be"))
    return data[:2] + xmp + jumbf + photoshop + data[2:] + b"trailing " + NAME.encode()


def _webp_with_everything() -> bytes:
    exif = Image.Exif()
    exif[0x0131] = NAME
    out = io.BytesIO()
    _base("RGBA").save(out, "WEBP", lossless=True, exif=exif.tobytes(),
                       xmp=f"<x>{NAME}</x>".encode(), icc_profile=b"\0" * 40 + NAME.encode())
    return out.getvalue()


def _assert_blind(original: bytes, clean: bytes) -> None:
    assert NAME.encode() in original  # the fixture really carries the name
    for form in FORMS:
        assert form not in clean
    assert np.array_equal(_pixels(clean), _pixels(original))


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L"])
def test_png_text_exif_xmp_icc_and_c2pa_are_dropped_pixels_kept(mode):
    original = _png_with_everything(mode)
    clean = strip_metadata(original)
    assert clean.format == "PNG"
    _assert_blind(original, clean.data)
    for chunk in (b"tEXt", b"zTXt", b"iTXt", b"eXIf", b"iCCP", b"caBX", b"tIME"):
        assert chunk not in clean.data
    # the pixel data was not re-compressed: the IDAT chunks are the original bytes
    assert _idat(clean.data) == _idat(original)


def test_a_name_hidden_after_the_compressed_pixels_forces_a_re_encode():
    out = io.BytesIO()
    _base().save(out, "PNG")
    png = out.getvalue()
    at = png.index(b"IDAT")
    length = struct.unpack(">I", png[at - 4:at])[0]
    body = png[at + 4:at + 4 + length] + NAME.encode()  # bytes after the zlib stream
    doctored = png[:at - 4] + _png_chunk(b"IDAT", body) + png[at + 8 + length:]
    clean = strip_metadata(doctored)
    _assert_blind(doctored, clean.data)


@pytest.mark.parametrize("orientation", [1, 6])
def test_jpeg_app_segments_and_comments_are_dropped_without_re_encoding(orientation):
    original = _jpeg_with_everything(orientation)
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
    original = _webp_with_everything()
    clean = strip_metadata(original)
    assert clean.format == "PNG"
    _assert_blind(original, clean.data)


def test_unparseable_containers_are_re_encoded_not_passed_through():
    out = io.BytesIO()
    _base().save(out, "PNG")
    broken = out.getvalue()[:-12]  # no IEND: the chunk walk fails, the decoder does not
    broken_tail = broken + _png_chunk(b"tEXt", b"Model\0" + NAME.encode())[:10]
    with pytest.raises(OSError):
        strip_metadata(broken_tail)  # not decodable either: an error, never the raw bytes


def test_served_images_are_cached_and_originals_untouched(tmp_path: Path):
    path = tmp_path / "m.png"
    path.write_bytes(_png_with_everything())
    before = path.read_bytes()
    cache = tmp_path / "cache"
    first = served_image(path, cache)
    assert path.read_bytes() == before
    assert len(list(cache.iterdir())) == 1
    again = served_image(path, cache)
    assert again.data == first.data and again.width == 56
    # a replaced file is cleaned again (the cache key includes size and mtime)
    out = io.BytesIO()
    _base("L").save(out, "PNG")
    path.write_bytes(out.getvalue())
    assert served_image(path, cache).data != first.data

"""Images as generators write them: the model name in every kind of metadata.

Used by the blinding tests (tests/test_media.py, the browser tests).
"""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
from PIL import Image, PngImagePlugin

NAME = "SecretModel-XL"
FORMS = [NAME.encode(), NAME.encode("utf-16-le"), NAME.encode("utf-16-be")]


def pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im.convert("RGBA"))


def base_image(mode: str = "RGB", size: tuple[int, int] = (56, 40)) -> Image.Image:
    rng = np.random.default_rng(1)
    channels = {"RGB": 3, "RGBA": 4, "L": 1}[mode]
    arr = (rng.random((size[1], size[0], channels)) * 255).astype(np.uint8)
    return Image.fromarray(arr.squeeze() if channels == 1 else arr, mode)


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(
        ">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def idat_chunks(png: bytes) -> bytes:
    """The raw IDAT chunks of a PNG, in order."""
    out, pos = b"", 8
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        if kind == b"IDAT":
            out += png[pos:pos + 12 + length]
        pos += 12 + length
    return out


def insert_before_iend(png: bytes, *chunks: bytes) -> bytes:
    at = png.rindex(b"IEND") - 4
    return png[:at] + b"".join(chunks) + png[at:]


def png_with_everything(mode: str = "RGB", size: tuple[int, int] = (56, 40)) -> bytes:
    info = PngImagePlugin.PngInfo()
    info.add_text("parameters", f"a cat\nSteps: 20, Model: {NAME}")
    info.add_text("Software", NAME, zip=True)
    info.add_itxt("Description", f"made by {NAME}", lang="en", tkey="Beschreibung")
    exif = Image.Exif()
    exif[0x0131] = NAME
    out = io.BytesIO()
    base_image(mode, size).save(out, "PNG", pnginfo=info, exif=exif.tobytes(),
                     icc_profile=b"\0" * 40 + NAME.encode())
    xmp = f'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf>{NAME}</rdf></x:xmpmeta>'.encode()
    c2pa = b"jumb" + b"c2pa.manifest " + NAME.encode()
    return insert_before_iend(
        out.getvalue(), png_chunk(b"iTXt", b"XML:com.adobe.xmp\0\0\0\0\0" + xmp),
        png_chunk(b"caBX", c2pa), png_chunk(b"tIME", b"\x07\xea\x0b\x17\x0c\x00\x00"))


def _jpeg_segment(marker: int, body: bytes) -> bytes:
    return bytes((0xFF, marker)) + struct.pack(">H", len(body) + 2) + body


def jpeg_with_everything(orientation: int = 1, size: tuple[int, int] = (56, 40)) -> bytes:
    exif = Image.Exif()
    exif[0x0131] = NAME
    exif[0x010E] = f"prompt: a cat, model {NAME}"
    exif[0x0112] = orientation
    out = io.BytesIO()
    base_image("RGB", size).save(out, "JPEG", quality=90, exif=exif.tobytes(),
                                 comment=NAME.encode(), icc_profile=b"\0" * 40 + NAME.encode())
    data = out.getvalue()
    xmp = _jpeg_segment(0xE1, b"http://ns.adobe.com/xap/1.0/\0<x>" + NAME.encode() + b"</x>")
    jumbf = _jpeg_segment(0xEB, b"JP\0\x01\0\0\0\x01jumbc2pa" + NAME.encode())
    photoshop = _jpeg_segment(0xED, b"Photoshop 3.0\0" + NAME.encode("utf-16-be"))
    return data[:2] + xmp + jumbf + photoshop + data[2:] + b"trailing " + NAME.encode()


def webp_with_everything(size: tuple[int, int] = (56, 40)) -> bytes:
    exif = Image.Exif()
    exif[0x0131] = NAME
    out = io.BytesIO()
    base_image("RGBA", size).save(out, "WEBP", lossless=True, exif=exif.tobytes(),
                       xmp=f"<x>{NAME}</x>".encode(), icc_profile=b"\0" * 40 + NAME.encode())
    return out.getvalue()

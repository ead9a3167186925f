"""One size and one file type for every image a rater sees (the study's ``display``).

:func:`normalise` decodes an image, turns it upright (EXIF orientation), flattens it to
8-bit RGB (transparency over white), resizes it with Pillow's Lanczos filter so that its
longer side is ``size`` pixels, and writes a PNG with *stored* (uncompressed) deflate
blocks. The file's length then depends only on its width and height, never on what the
picture shows: a compressed PNG's length tells how busy the picture is, so a model whose
images are smooth (upscaled from a smaller size, say) could be picked out by byte length
alone. The price is size on the wire: width × height × 3 bytes (768 KiB at 512 px).
No metadata is written: the chunks are IHDR, IDAT and IEND only.
"""

from __future__ import annotations

import io
import struct
import zlib

from PIL import Image, ImageOps

from concord.media import PNG_SIGNATURE, CleanImage

_IDAT_BYTES = 1 << 20  # IDAT chunk length: fixed, so the chunking is the same everywhere
_WHITE = (255, 255, 255)


def target_size(width: int, height: int, size: int) -> tuple[int, int]:
    """(w, h) with the longer side ``size`` and the aspect ratio kept (at least 1 px)."""
    scale = size / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def normalise(data: bytes, size: int) -> CleanImage:
    """The image in ``data`` at ``size`` px (longer side) as a fixed-length RGB PNG.

    Raises:
        OSError: the bytes are not an image Pillow can decode.
    """
    try:
        with Image.open(io.BytesIO(data)) as opened:
            opened.load()
            rgb = flatten(ImageOps.exif_transpose(opened))
    except (SyntaxError, ValueError) as exc:
        raise OSError(f"not a decodable image ({exc})") from exc
    wanted = target_size(*rgb.size, size)
    if wanted != rgb.size:
        rgb = rgb.resize(wanted, Image.Resampling.LANCZOS)
    return CleanImage(stored_png(rgb), "PNG")


def flatten(im: Image.Image) -> Image.Image:
    """8-bit RGB: transparency composited over white, 16-bit grey scaled to 8 bits."""
    if im.mode in ("I;16", "I;16B", "I;16L", "I"):
        im = im.convert("I").point(lambda v: v / 256).convert("L")
    if im.mode == "P" and "transparency" in im.info:
        im = im.convert("RGBA")
    if im.mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        rgba = im.convert("RGBA")
        background = Image.new("RGB", rgba.size, _WHITE)
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return im.convert("RGB") if im.mode != "RGB" else im.copy()


def _chunk(kind: bytes, body: bytes) -> bytes:
    return (struct.pack(">I", len(body)) + kind + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))


def stored_png(rgb: Image.Image) -> bytes:
    """An RGB image as a PNG whose length is a function of its width and height only:
    filter 0 on every row, deflate level 0 (stored blocks), fixed-size IDAT chunks."""
    w, h = rgb.size
    raw, stride = rgb.tobytes(), w * 3
    deflate = zlib.compressobj(level=0)
    stream = [deflate.compress(b"\x00" + raw[y * stride:(y + 1) * stride]) for y in range(h)]
    stream.append(deflate.flush())
    data = b"".join(stream)
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    out = [PNG_SIGNATURE, _chunk(b"IHDR", ihdr)]
    out += [_chunk(b"IDAT", data[i:i + _IDAT_BYTES]) for i in range(0, len(data), _IDAT_BYTES)]
    out.append(_chunk(b"IEND", b""))
    return b"".join(out)

"""Image bytes a rater may see: the same pixels, no metadata.

Generators write their name and settings into the files they produce (PNG text chunks such
as ``parameters: … Model: …``, EXIF ``Software``, XMP, C2PA/JUMBF manifests), so serving a
file byte for byte would unblind a study. :func:`strip_metadata` keeps only what defines the
pixels:

- PNG: the chunks that define the image (IHDR, PLTE, tRNS, IDAT, IEND and the numeric
  colour chunks gAMA, cHRM, sRGB, sBIT), copied unchanged, so the pixel data is not even
  re-compressed; a file whose compressed pixel stream carries trailing bytes is re-encoded.
- JPEG: every APPn and COM segment is dropped, the rest copied without re-encoding; an
  Adobe APP14 marker (12 fixed bytes that tell decoders the colour transform) stays, and an
  EXIF orientation other than 1 is written back as a one-tag EXIF block, so the browser
  shows the image the right way up.
- Anything else (WebP, or a file these parsers do not understand) is decoded and saved as a
  lossless PNG without metadata.

Dropped as well: embedded ICC profiles (their description is free text). Decoded pixels
equal the original's in every case.
"""

from __future__ import annotations

import io
import struct
import zlib
from dataclasses import dataclass

from PIL import Image

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_KEEP = {b"IHDR", b"PLTE", b"tRNS", b"gAMA", b"cHRM", b"sRGB", b"sBIT", b"IDAT", b"IEND"}
_ORIENTATION = 0x0112
_ADOBE_APP14 = 0xEE


@dataclass(frozen=True, slots=True)
class CleanImage:
    """Metadata-free image bytes and their format (``"PNG"`` or ``"JPEG"``)."""

    data: bytes
    format: str


class _Malformed(ValueError):
    """The container could not be walked; the caller re-encodes instead."""


def strip_metadata(data: bytes) -> CleanImage:
    """The image in ``data`` without any metadata, pixels unchanged (see the module doc).

    Raises:
        OSError: the bytes are not an image Pillow can decode (never passed through raw).
    """
    try:
        if data.startswith(PNG_SIGNATURE):
            return CleanImage(_clean_png(data), "PNG")
        if data.startswith(b"\xff\xd8"):
            return CleanImage(_clean_jpeg(data), "JPEG")
    except (_Malformed, IndexError, struct.error):
        pass
    try:
        return CleanImage(_reencode_png(data), "PNG")
    except (SyntaxError, ValueError) as exc:
        raise OSError(f"not a decodable image ({exc})") from exc


def _reencode_png(data: bytes) -> bytes:
    """Decode and save as PNG without any ancillary chunk (lossless)."""
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        if im.mode not in ("1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA"):
            im = im.convert("RGBA" if "A" in im.getbands() else "RGB")
        if im.mode == "P" and "transparency" in im.info:
            im = im.convert("RGBA")
        clean = Image.new(im.mode, im.size)
        if im.mode == "P":
            clean.putpalette(im.getpalette() or [])
        clean.paste(im)
        out = io.BytesIO()
        # compress_level 1: re-encoding is rare and on a rater's path; size matters less.
        clean.save(out, format="PNG", compress_level=1)
    return out.getvalue()


def _png_chunks(data: bytes):
    pos = len(PNG_SIGNATURE)
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        end = pos + 12 + length
        if end > len(data):
            raise _Malformed("PNG chunk runs past the end of the file")
        yield kind, data[pos + 8:pos + 8 + length], data[pos:end]
        if kind == b"IEND":
            return
        pos = end
    raise _Malformed("PNG without IEND")


def _clean_png(data: bytes) -> bytes:
    kept, pixels = [PNG_SIGNATURE], []
    for kind, body, raw in _png_chunks(data):
        if kind in _PNG_KEEP:
            kept.append(raw)
        if kind == b"IDAT":
            pixels.append(body)
    if not _zlib_stream_is_exact(pixels):
        raise _Malformed("bytes after the end of the compressed pixel data")
    return b"".join(kept)


def _zlib_stream_is_exact(parts: list[bytes]) -> bool:
    """Whether the IDAT data is one complete zlib stream with nothing after it.

    Decompressed in bounded steps (nothing is kept), so a large image costs little memory.
    """
    stream = zlib.decompressobj()
    try:
        for part in parts:
            chunk = part
            while chunk:
                stream.decompress(chunk, 1 << 20)
                chunk = stream.unconsumed_tail
                if stream.eof and (chunk or stream.unused_data):
                    return False
        while not stream.eof and stream.decompress(b"", 1 << 20):
            pass
    except zlib.error:
        return False
    return stream.eof and not stream.unused_data


def _clean_jpeg(data: bytes) -> bytes:
    out = [b"\xff\xd8"]
    orientation = _jpeg_orientation(data)
    if orientation not in (None, 1):
        out.append(_exif_orientation_segment(orientation))
    pos = 2
    while pos < len(data):
        marker, pos = _next_marker(data, pos)
        if marker == 0xD9:  # EOI: anything after it (thumbnails, MPO frames) is dropped
            out.append(b"\xff\xd9")
            return b"".join(out)
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:
            out.append(bytes((0xFF, marker)))
            continue
        if pos + 2 > len(data):
            raise _Malformed("JPEG segment header cut off")
        length = struct.unpack(">H", data[pos:pos + 2])[0]
        segment = data[pos - 2:pos + length]
        if len(segment) != length + 2 or length < 2:
            raise _Malformed("JPEG segment runs past the end of the file")
        pos += length
        if _keep_jpeg_segment(marker, segment):
            out.append(segment)
        if marker == 0xDA:  # start of scan: copy the entropy-coded data that follows
            end = _scan_end(data, pos)
            out.append(data[pos:end])
            pos = end
    raise _Malformed("JPEG without EOI")


def _next_marker(data: bytes, pos: int) -> tuple[int, int]:
    if data[pos] != 0xFF:
        raise _Malformed(f"expected a JPEG marker at offset {pos}")
    while pos < len(data) and data[pos] == 0xFF:  # fill bytes
        pos += 1
    if pos >= len(data):
        raise _Malformed("JPEG ends inside a marker")
    return data[pos], pos + 1


def _keep_jpeg_segment(marker: int, segment: bytes) -> bool:
    if marker == 0xFE:  # COM
        return False
    if 0xE0 <= marker <= 0xEF:  # APPn: JFIF, EXIF, XMP, ICC, JUMBF/C2PA, Photoshop, ...
        return marker == _ADOBE_APP14 and len(segment) == 16 and segment[4:9] == b"Adobe"
    return True


def _scan_end(data: bytes, pos: int) -> int:
    """Offset of the first marker after entropy-coded data (not a stuffed 0x00 or RSTn)."""
    while True:
        pos = data.find(b"\xff", pos)
        if pos < 0 or pos + 1 >= len(data):
            raise _Malformed("JPEG scan data without an end")
        nxt = data[pos + 1]
        if nxt == 0x00 or 0xD0 <= nxt <= 0xD7 or nxt == 0xFF:
            pos += 1 if nxt == 0xFF else 2
            continue
        return pos


def _jpeg_orientation(data: bytes) -> int | None:
    try:
        with Image.open(io.BytesIO(data)) as im:
            value = im.getexif().get(_ORIENTATION)
    except (OSError, SyntaxError, ValueError):
        return None
    return value if isinstance(value, int) and 1 <= value <= 8 else None


def _exif_orientation_segment(orientation: int) -> bytes:
    """An APP1 EXIF block holding nothing but the orientation tag."""
    tiff = (b"MM\x00\x2a\x00\x00\x00\x08" + struct.pack(">H", 1)
            + struct.pack(">HHIHH", _ORIENTATION, 3, 1, orientation, 0) + b"\x00\x00\x00\x00")
    body = b"Exif\x00\x00" + tiff
    return b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body

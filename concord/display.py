"""How images reach raters: as the generators wrote them (metadata stripped), or normalised
to one size and one file type (the manifest's ``display`` key).

A model whose images are 256 px while the others' are 512 px, or JPEG while the others are
PNG, can be recognised on sight, in the URL or by the file size, and a blind study is
blind no more. ``display: {size: N, format: png}`` serves every image resized on the
server (Pillow's Lanczos filter) so that its longer side is N pixels, as a PNG of a
length that depends only on its width and height (concord.normalise). Without the key,
:func:`resolve` turns it on when the models' images differ in size or file type, at the
largest size any model has (so no model loses detail). Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

FORMATS = ("png",)
MIN_SIZE, MAX_SIZE = 16, 8192
KEYS = ("size", "format")


@dataclass(frozen=True, slots=True)
class Display:
    """Normalised serving: the longer side in pixels and the file type."""

    size: int
    format: str = "png"
    auto: bool = False  # chosen by the import because the models differ

    def stored(self) -> dict[str, Any]:
        """What the study settings keep."""
        return {"size": self.size, "format": self.format, "auto": self.auto}

    def label(self) -> str:
        """How exports name it, e.g. ``512px png``."""
        return f"{self.size}px {self.format}"

    @classmethod
    def of(cls, settings: dict[str, Any] | None) -> Display | None:
        """From a study's stored settings; None when images are served as they are."""
        found = (settings or {}).get("display")
        if not isinstance(found, dict) or not isinstance(found.get("size"), int):
            return None
        return cls(int(found["size"]), str(found.get("format", "png")),
                   bool(found.get("auto", False)))


ORIGINAL = "original"  # the export label of a study without normalisation


def parse(value: Any) -> tuple[dict[str, Any] | bool | None, list[tuple[str, str]]]:
    """The manifest's ``display``: None (decide at import), False (never normalise) or a
    mapping with an optional ``size`` and ``format``; problems as ``(key, message)``."""
    if value is None:
        return None, []
    if isinstance(value, bool):
        return ({} if value else False), []
    if not isinstance(value, dict):
        return None, [("display", f"expected a mapping, true or false, got {value!r}")]
    problems = [(f"display.{k}", f"unknown key (known: {', '.join(KEYS)})")
                for k in sorted(set(value) - set(KEYS), key=str)]
    size, fmt = value.get("size"), value.get("format", "png")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int)
                             or not MIN_SIZE <= size <= MAX_SIZE):
        problems.append(("display.size", f"expected a whole number of pixels from {MIN_SIZE}"
                                         f" to {MAX_SIZE}, got {size!r}"))
    if fmt not in FORMATS:
        problems.append(("display.format", f"expected one of {', '.join(FORMATS)}, "
                                           f"got {fmt!r}"))
    return ({"size": size, "format": fmt} if size is not None else {"format": fmt}), problems


@dataclass(frozen=True, slots=True)
class Appearance:
    """What one model's images look like: counts of sizes (w, h) and file types."""

    sizes: Counter
    formats: Counter

    def text(self) -> str:
        """``512×512 (7), 256×256 (1); JPEG (8)``."""
        sizes = ", ".join(f"{w}×{h} ({n})" for (w, h), n in self.sizes.most_common())
        formats = ", ".join(f"{f} ({n})" for f, n in self.formats.most_common())
        return f"{sizes}; {formats}"


def appearances(images: list[tuple[str, int, int, str]]) -> dict[str, Appearance]:
    """Per model, from ``(model, width, height, format)`` of every image."""
    out: dict[str, Appearance] = {}
    for model, w, h, fmt in images:
        found = out.setdefault(model, Appearance(Counter(), Counter()))
        found.sizes[(w, h)] += 1
        found.formats[fmt] += 1
    return out


def differ(found: dict[str, Appearance]) -> bool:
    """Whether some model's images have sizes or file types another model's lack."""
    kinds = {(frozenset(a.sizes), frozenset(a.formats)) for a in found.values()}
    return len(kinds) > 1


def resolve(spec: dict[str, Any] | bool | None,
            found: dict[str, Appearance]) -> Display | None:
    """The study's display: the manifest's choice, else on when the models differ."""
    if spec is False or (spec is None and not differ(found)):
        return None
    largest = max((max(w, h) for a in found.values() for w, h in a.sizes), default=512)
    size = spec.get("size") if isinstance(spec, dict) else None
    fmt = spec.get("format", "png") if isinstance(spec, dict) else "png"
    return Display(int(size or largest), str(fmt), auto=spec is None)


def warnings(found: dict[str, Appearance], display: Display | None) -> list[str]:
    """What the researcher should know about how the models' images look to raters."""
    if not differ(found):
        return []
    if display is None:
        return ["the models' images differ in size or file type (see the sizes per model); "
                "raters can tell the models apart: set display: {size: N, format: png} in "
                "the manifest"]
    out = ["the models' images differ in size or file type (see the sizes per model); "
           f"every image is served as a {display.size} px {display.format.upper()} (display)"]
    ratios = {round(w / h, 3) for a in found.values() for w, h in a.sizes}
    if len(ratios) > 1:
        out.append("the models' images differ in aspect ratio; display keeps each image's "
                   "aspect ratio, so that difference stays visible")
    small = sorted(m for m, a in found.items() if any(max(w, h) < display.size
                                                       for w, h in a.sizes))
    if small:
        out.append(f"images of {', '.join(small)} are upscaled to {display.size} px")
    return out

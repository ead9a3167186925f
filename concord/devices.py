"""Which screens a study needs (the manifest's ``devices`` key): a smallest browser window,
or a desktop (a mouse or trackpad, not a phone or a tablet). Crowd platforms let a
researcher restrict devices; a participant who comes anyway is told before the consent,
not half-way through the study. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

KEYS = ("min_width", "min_height", "desktop_only")
MAX_PIXELS = 20_000


@dataclass(frozen=True, slots=True)
class Devices:
    """The smallest window (CSS pixels; 0: any) and whether only desktops may take part."""

    min_width: int = 0
    min_height: int = 0
    desktop_only: bool = False

    def stored(self) -> dict[str, Any]:
        """What the study settings keep."""
        return {"min_width": self.min_width, "min_height": self.min_height,
                "desktop_only": self.desktop_only}

    @property
    def any(self) -> bool:
        """Whether the study asks anything of the screen at all."""
        return bool(self.min_width or self.min_height or self.desktop_only)

    @classmethod
    def of(cls, settings: dict[str, Any] | None) -> Devices:
        """From a study's stored settings (no requirement when there is none)."""
        found = (settings or {}).get("devices")
        if not isinstance(found, dict):
            return cls()
        return cls(int(found.get("min_width", 0)), int(found.get("min_height", 0)),
                   bool(found.get("desktop_only", False)))


def parse(value: Any) -> tuple[Devices | None, list[tuple[str, str]]]:
    """The manifest's ``devices`` mapping; problems as ``(key, message)``."""
    if value is None:
        return None, []
    if not isinstance(value, dict):
        return None, [("devices", f"expected a mapping (min_width, min_height, "
                                  f"desktop_only), got {value!r}"[:300])]
    problems = [(f"devices.{k}", f"unknown key (known: {', '.join(KEYS)})")
                for k in sorted(set(value) - set(KEYS), key=str)]
    sizes = {}
    for key in ("min_width", "min_height"):
        got = value.get(key, 0)
        if isinstance(got, bool) or not isinstance(got, int) or not 0 <= got <= MAX_PIXELS:
            problems.append((f"devices.{key}", f"expected a whole number of pixels from 0 to "
                                               f"{MAX_PIXELS:,}, got {got!r}"[:300]))
            got = 0
        sizes[key] = got
    desktop = value.get("desktop_only", False)
    if not isinstance(desktop, bool):
        problems.append(("devices.desktop_only", f"expected true or false, got {desktop!r}"
                         [:300]))
        desktop = False
    return Devices(sizes["min_width"], sizes["min_height"], desktop), problems


@dataclass(frozen=True, slots=True)
class Screen:
    """What the browser said of itself: its window in CSS pixels, and whether it has a
    fine pointer (a mouse or trackpad) and no mobile user agent."""

    width: int
    height: int
    desktop: bool


def screen(report: Any) -> Screen | None:
    """The browser's report (anything: it comes from the page), or None when it is not
    one."""
    if not isinstance(report, dict):
        return None
    width, height, desktop = report.get("width"), report.get("height"), report.get("desktop")
    sizes_ok = all(isinstance(v, int | float) and not isinstance(v, bool)
                   and 0 < v <= 1_000_000 for v in (width, height))  # NaN fails too
    if not sizes_ok or not isinstance(desktop, bool):
        return None
    return Screen(int(width), int(height), desktop)


def refusal(needed: Devices, seen: Screen | None) -> str | None:
    """Why this screen cannot take part (one sentence for the participant), or None."""
    if not needed.any:
        return None
    if seen is None:
        return ("this study could not check your screen; please open the link in an "
                "up-to-date browser on a computer")
    if needed.desktop_only and not seen.desktop:
        return ("this study needs a computer with a mouse or trackpad; please open the link "
                "on a desktop or laptop computer (phones and tablets cannot take part)")
    if seen.width < needed.min_width or seen.height < needed.min_height:
        sizes = [f"{n} pixels {what}" for n, what in ((needed.min_width, "wide"),
                                                     (needed.min_height, "high")) if n]
        return (f"this study needs a browser window at least {' and '.join(sizes)}, and "
                f"yours is {seen.width} × {seen.height}; please open the link on a larger "
                "screen (or make the window larger, then reload the page)")
    return None

"""Reading a large JSON array one element at a time, in bounded memory.

``json.loads`` of a 120 MiB array of Label Studio tasks builds every task at once: 3 GB and
more, since a small dict or list costs 50 to 100 times its text. :func:`array_items` reads
the file in chunks of :data:`CHUNK_BYTES` and decodes one element at a time with the C
decoder (``JSONDecoder.raw_decode``), so memory holds one chunk, one element's text and
the element itself. Each element gets the bounds of :func:`safe_load.load_json` (no key
twice, nesting, number length) and at most :data:`MAX_ITEM_BYTES` of text; every problem
is a :class:`safe_load.LoadError` with its line.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from concord.importers.safe_load import (
    MAX_DEPTH,
    DuplicateKey,
    LoadError,
    check_depth,
    unique_object,
)

CHUNK_BYTES = 1 << 20
# One element's text (a Label Studio task with tens of annotations is a few kB).
MAX_ITEM_BYTES = 4 << 20
_WS = " \t\n\r"
# An error this close to the end of the text read so far may be the element being cut
# short by the chunk boundary rather than a mistake: read on before judging.
_NEAR_END = 64
_DECODER = json.JSONDecoder(object_pairs_hook=unique_object)
_KINDS = {"{": "an object", '"': "a string", "t": "true/false", "f": "true/false",
          "n": "null"}


class _Text:
    """The file's text read so far from ``buf[0]``; ``pos`` is where reading is. Text
    before ``pos`` is dropped only when more is read (so an element costs no copy of the
    chunk), and lines are counted once, up to a mark that only moves on."""

    def __init__(self, handle: BinaryIO, limit: int) -> None:
        self.handle, self.limit, self.read_bytes = handle, limit, 0
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.buf, self.pos, self.eof = "", 0, False
        self.mark, self.line, self.col = 0, 1, 1  # buf[mark] is at (line, col)

    def more(self, size: int | None = None) -> bool:
        """Drop the text before ``pos``, then append up to ``size`` (default
        :data:`CHUNK_BYTES`) more bytes of text; False at the end of the file."""
        if self.eof:
            return False
        self.where(self.pos)  # the mark moves to pos: what is dropped is counted
        self.buf, self.mark, self.pos = self.buf[self.pos:], 0, 0
        data = self.handle.read(size or CHUNK_BYTES)
        self.read_bytes += len(data)
        if self.read_bytes > self.limit:
            raise LoadError(f"file larger than the limit of {self.limit / (1 << 20):,.0f} MiB"
                            " for this input")
        self.eof = not data
        try:
            self.buf += self.decoder.decode(data, final=self.eof)
        except UnicodeDecodeError as exc:
            offset = self.read_bytes - len(data) + exc.start
            raise LoadError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                            f"{offset}); save the file as UTF-8", self.where(len(self.buf))[0]) \
                from exc
        return True

    def where(self, at: int) -> tuple[int, int]:
        """(line, column) of ``buf[at]``; ``at`` no earlier than the last one asked for
        (an error's position may be; it is counted from the mark without moving it)."""
        if at < self.mark:
            return self.line, self.col
        lines = self.buf.count("\n", self.mark, at)
        line = self.line + lines
        col = at - self.buf.rfind("\n", self.mark, at) if lines else self.col + at - self.mark
        self.mark, self.line, self.col = at, line, col
        return line, col

    def skip_space(self) -> str:
        """The next character that is not white space ("" at the end of the file)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def malformed(self, message: str, at: int) -> LoadError:
        line, col = self.where(at)
        return LoadError(f"malformed JSON: {message} (column {col})", line)


def array_items(handle: BinaryIO, limit: int, what: str,
                expected: str = "a JSON array") -> Iterator[tuple[int, Any]]:
    """Yield ``(line, element)`` for each element of the JSON array that ``handle`` holds.

    Args:
        handle: the file, opened for reading bytes.
        limit: the most bytes read; a longer file is refused.
        what: what an element is called in messages ("task").
        expected: what the document should be, for the message when it is no array.

    Raises:
        LoadError: not an array, malformed, over a bound; ``line`` says where.
    """
    text = _Text(handle, limit)
    first = text.skip_space()
    if first != "[":
        if first in _KINDS or first.isdigit() or first == "-":
            raise LoadError(f"expected {expected}, got {_KINDS.get(first, 'a number')}")
        raise text.malformed("Expecting value", text.pos)
    text.pos += 1
    if text.skip_space() == "]":
        text.pos += 1
    else:
        index = 0
        while True:
            yield _element(text, index, what)
            index += 1
            after = text.skip_space()
            if after == "]":
                text.pos += 1
                break
            if after != ",":
                raise text.malformed("Expecting ',' delimiter", text.pos)
            text.pos += 1
            text.skip_space()
    if text.skip_space():
        raise text.malformed("Extra data", text.pos)


def _element(text: _Text, index: int, what: str) -> tuple[int, Any]:
    """Decode the element at ``text.pos``, reading on while it may be cut short."""
    size = CHUNK_BYTES
    while True:
        start = text.pos  # more() moves the element to the start of the buffer
        try:
            value, end = _DECODER.raw_decode(text.buf, start)
        except json.JSONDecodeError as exc:
            cut = exc.pos >= len(text.buf) - _NEAR_END or exc.msg.startswith("Unterminated")
            if not cut or not _read_on(text, size, len(text.buf) - start, index, what):
                raise text.malformed(exc.msg, exc.pos) from exc
        except RecursionError as exc:
            raise LoadError(f"nested more than {MAX_DEPTH} levels deep",
                            text.where(start)[0]) from exc
        except DuplicateKey as exc:
            raise LoadError(str(exc), text.where(start)[0]) from exc
        except ValueError as exc:  # an integer longer than sys.get_int_max_str_digits()
            raise LoadError("a number with more than 4,300 digits",
                            text.where(start)[0]) from exc
        else:
            # A number cut by the chunk boundary parses ("1." as 1): judge it with more text
            if end < len(text.buf) - _NEAR_END or \
                    not _read_on(text, size, end - start, index, what):
                line = text.where(start)[0]
                try:
                    check_depth(value, MAX_DEPTH - 1)  # the array itself is one level
                except LoadError as exc:
                    raise LoadError(f"nested more than {MAX_DEPTH} levels deep", line) \
                        from exc
                text.pos = end
                return line, value
        size *= 2  # each retry reads twice as much: linear time for any element size


def _read_on(text: _Text, size: int, length: int, index: int, what: str) -> bool:
    """Read more of an element (``length`` characters so far) that may be cut short;
    False at the end of the file."""
    if length > MAX_ITEM_BYTES:
        raise LoadError(f"{what} {index} is longer than {MAX_ITEM_BYTES >> 20} MiB of JSON",
                        text.where(text.pos)[0])
    return text.more(size)


def read_array(path: Path, limit: int, what: str,
               expected: str = "a JSON array") -> Iterator[tuple[int, Any]]:
    """:func:`array_items` of the file at ``path`` (a regular file, checked by the caller)."""
    with path.open("rb") as handle:
        yield from array_items(handle, limit, what, expected)

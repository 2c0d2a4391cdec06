"""A JSON document read a piece at a time: json.JSONDecoder.raw_decode over a buffer holding the
value being decoded and what follows it, so an array of any length (a bundle's results) is
decoded one item at a time and memory holds one item, not the document (store/bundle_read.py).
The stdlib decoder cannot stream an array itself, and the project takes no dependency for it.
Errors read as json.loads writes them (`Expecting ',' delimiter`, line and column in the file).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, TextIO

from rigbench.errors import UsageError

#: Characters read at a time; a value longer than this (a 50 MB error text) grows the buffer.
CHUNK = 1 << 20
_SPACE = re.compile(r"[ \t\n\r]*")
# A decode error this close to the buffer's end may be the value going on past it (a literal
# or a number cut short: `-Infinity`, `1.5e-3`, `\uXXXX`); more text is read and it is tried again.
_NEAR_END = 32


class JsonStream:
    """The JSON text of `text`, decoded value by value (`value`), with the punctuation between
    values taken by `take` and `expect`. Errors are UsageError: `{origin}: not valid JSON (...)`."""

    def __init__(self, text: TextIO, origin: str, chunk: int | None = None):
        self._text, self._origin, self._chunk = text, origin, chunk or CHUNK
        self._buf, self._pos, self._eof = "", 0, False
        self._dropped = 0  # characters decoded and dropped from the buffer's start
        #: where the value decoded last began, in characters from the start of the text
        self.start = 0
        self._line, self._line_start = 1, 0  # the buffer's first line, and where it starts (may be < 0)
        self._decoder = json.JSONDecoder()

    def _more(self) -> bool:
        """Read more (at least as much as is held, so a long value is read in linear time),
        dropping what was decoded; False at the end of the text (and nothing moved)."""
        if self._eof:
            return False
        piece = self._text.read(max(self._chunk, len(self._buf) - self._pos))
        if not piece:
            self._eof = True
            return False
        done = self._buf[:self._pos]
        self._dropped += self._pos
        lines = done.count("\n")
        self._line += lines
        self._line_start = done.rindex("\n") + 1 - self._pos if lines else self._line_start - self._pos
        self._buf, self._pos = self._buf[self._pos:] + piece, 0
        return True

    def peek(self) -> str:
        """The next character that is not white space, '' at the end (not taken)."""
        while True:
            self._pos = _SPACE.match(self._buf, self._pos).end()  # type: ignore[union-attr]
            if self._pos < len(self._buf) or not self._more():
                return self._buf[self._pos:self._pos + 1]

    def take(self, char: str) -> bool:
        """Take `char` if it comes next."""
        if self.peek() != char:
            return False
        self._pos += 1
        return True

    def expect(self, chars: str, what: str) -> str:
        """Take the next character, one of `chars`, or fail `Expecting {what}`."""
        char = self.peek()
        if not char or char not in chars:
            raise self.error(f"Expecting {what}")
        self._pos += 1
        return char

    def value(self) -> Any:
        """Decode the next value."""
        return self._decoded(False)[0]

    def value_text(self) -> tuple[Any, str]:
        """Decode the next value; with its JSON text as the document holds it (a bundle's
        result is digested and validated from it, not from its decoding written out again)."""
        return self._decoded(True)

    def _decoded(self, text: bool) -> tuple[Any, str]:
        self.peek()
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                near_end = exc.pos >= len(self._buf) - _NEAR_END or exc.msg.startswith("Unterminated string")
                if near_end and self._more():
                    continue
                raise self.error(exc.msg, exc.pos) from None
            # a number near the end may go on in the next piece (`22.5` of `22.5e-3`)
            cut_short = isinstance(value, (int, float)) and end >= len(self._buf) - _NEAR_END
            if not cut_short or not self._more():
                start, self._pos = self._pos, end
                self.start = self._dropped + start
                return value, self._buf[start:end] if text else ""

    def end(self) -> None:
        """Only white space may follow."""
        if self.peek():
            raise self.error("Extra data")

    def error(self, message: str, pos: int | None = None) -> UsageError:
        at = self._pos if pos is None else pos
        newline = self._buf.rfind("\n", 0, at)
        line = self._line + self._buf.count("\n", 0, at)
        column = at - newline if newline >= 0 else at - self._line_start + 1
        return UsageError(f"{self._origin}: not valid JSON (line {line}, column {column}: {message})")


#: What `entries` gives as the value of an array it goes on to give item by item.
ARRAY = object()


def entries(stream: JsonStream, streamed: str, texts: bool = False) -> Iterator[tuple[str | None, Any]]:
    """The entries of the object `stream` holds, in order, as (key, value); the value of key
    `streamed`, when an array, comes as (streamed, ARRAY) and then (None, item) for each item
    (with `texts`, (None, (item, its JSON text, where that starts: JsonStream.start))), each
    decoded only when the one before has been used. Then only white space may follow."""
    stream.expect("{", "value")
    if not stream.take("}"):
        while True:
            if stream.peek() != '"':
                raise stream.error("Expecting property name enclosed in double quotes")
            key = stream.value()
            stream.expect(":", "':' delimiter")
            if key == streamed and stream.take("["):
                yield key, ARRAY
                if not stream.take("]"):
                    while True:
                        yield None, (*stream.value_text(), stream.start) if texts else stream.value()
                        if stream.expect(",]", "',' delimiter") == "]":
                            break
            else:
                yield key, stream.value()
            if stream.expect(",}", "',' delimiter") == "}":
                break
    stream.end()

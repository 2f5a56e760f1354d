"""Read the string values of a JSON text while it is still being written.

A streamed reply arrives in arbitrary pieces: one may end inside a key, in the middle of an escape
such as ``\\u00e9``, or between the two halves of a surrogate pair. ``JsonStringReader`` keeps just
enough state to know where in the document each character stands, and hands out the decoded
characters of the string values whose path the caller selects. It trusts the text to be
well-formed JSON (a schema-constrained reply) and validates nothing: ``json.loads`` of the whole
reply stays the judge of what the reply says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# The keys and array indexes that lead to a value, e.g. ("sentences", 0, "text").
JsonPath = tuple[str | int, ...]

_SIMPLE_ESCAPES = {
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}  # others stand for themselves
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_HIGH_SURROGATES = range(0xD800, 0xDC00)
_LOW_SURROGATES = range(0xDC00, 0xE000)


@dataclass(frozen=True)
class StringPiece:
    path: JsonPath  # where the string value stands
    text: str  # its characters that arrived in this piece, decoded


@dataclass
class _Container:
    is_object: bool
    key: str | int | None  # the current key of an object, the current index of an array
    expects_key: bool = False  # in an object: the next string is a key


class JsonStringReader:
    """Feed it the pieces of a JSON text in order; each ``feed`` returns the decoded characters of
    selected string values that the piece completed, one ``StringPiece`` per string touched."""

    def __init__(self, select: Callable[[JsonPath], bool]) -> None:
        self._select = select
        self._containers: list[_Container] = []
        self._in_string = False
        self._string_is_key = False
        self._string_is_selected = False
        self._chars: list[str] = []  # the current key, or what arrived of a selected value
        self._escape: str | None = None  # None: no escape; "": after "\"; "u12": hex digits so far
        self._high_surrogate: int | None = None  # "\uD83D" waiting for its low half
        self._pieces: list[StringPiece] = []

    def feed(self, text: str) -> list[StringPiece]:
        for char in text:
            if self._in_string:
                self._string_char(char)
            else:
                self._structure_char(char)
        if self._in_string and self._string_is_selected:
            self._flush()
        pieces, self._pieces = self._pieces, []
        return pieces

    def _path(self) -> JsonPath:
        return tuple(c.key for c in self._containers if c.key is not None)

    def _structure_char(self, char: str) -> None:
        top = self._containers[-1] if self._containers else None
        if char == "{":
            self._containers.append(_Container(is_object=True, key=None, expects_key=True))
        elif char == "[":
            self._containers.append(_Container(is_object=False, key=0))
        elif char in "}]":
            if self._containers:
                self._containers.pop()
        elif char == ":" and top is not None and top.is_object:
            top.expects_key = False
        elif char == "," and top is not None:
            if top.is_object:
                top.expects_key = True
            elif isinstance(top.key, int):
                top.key += 1
        elif char == '"':
            self._in_string = True
            self._string_is_key = top is not None and top.is_object and top.expects_key
            self._string_is_selected = not self._string_is_key and self._select(self._path())
        # Anything else is white space or part of a number, true, false or null: nothing to keep.

    def _string_char(self, char: str) -> None:
        if self._escape is None:
            if char == "\\":
                self._escape = ""
            elif char == '"':
                self._end_string()
            else:
                self._decoded(char)
        elif self._escape == "":
            if char == "u":
                self._escape = "u"
            else:
                self._escape = None
                self._decoded(_SIMPLE_ESCAPES.get(char, char))
        else:
            self._escape += char
            if len(self._escape) == 5:  # "u" and four hex digits
                digits, self._escape = self._escape[1:], None
                if all(d in _HEX_DIGITS for d in digits):  # else not JSON: json.loads will say so
                    self._code_point(int(digits, 16))

    def _code_point(self, code: int) -> None:
        """A ``\\uXXXX`` escape: a surrogate pair makes one character, as ``json.loads`` does."""
        if code in _LOW_SURROGATES and self._high_surrogate is not None:
            high, self._high_surrogate = self._high_surrogate, None
            self._append(chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)))
        elif code in _HIGH_SURROGATES:
            self._release_surrogate()
            self._high_surrogate = code
        else:
            self._decoded(chr(code))

    def _decoded(self, char: str) -> None:
        self._release_surrogate()
        self._append(char)

    def _release_surrogate(self) -> None:
        """A high surrogate not followed by a low one stays a lone surrogate, as in json.loads."""
        if self._high_surrogate is not None:
            self._append(chr(self._high_surrogate))
            self._high_surrogate = None

    def _append(self, char: str) -> None:
        if self._string_is_key or self._string_is_selected:
            self._chars.append(char)

    def _end_string(self) -> None:
        self._release_surrogate()
        self._in_string = False
        if self._string_is_key:
            self._containers[-1].key = "".join(self._chars)
            self._chars = []
        elif self._string_is_selected:
            self._flush()

    def _flush(self) -> None:
        if self._chars:
            self._pieces.append(StringPiece(self._path(), "".join(self._chars)))
            self._chars = []

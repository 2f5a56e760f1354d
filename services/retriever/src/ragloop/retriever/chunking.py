"""Split text into overlapping chunks on sentence boundaries, measured in characters or in the
embedding model's tokens. The text may arrive in pieces of any size: the chunker holds only the
unfinished line, paragraph, table piece and chunk, so a source of any length is chunked in bounded
memory."""

from __future__ import annotations

import itertools
import re
from typing import Any, NamedTuple, Protocol

from ragloop.core.text import split_sentences

HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
# A Markdown table: a header row, a separator row, then rows; each line starts with a pipe.
TABLE_ROW = re.compile(r"^\s{0,3}\|")
TABLE_SEPARATOR = re.compile(r"^\s{0,3}\|\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
# What str.splitlines() breaks lines at. A trailing "\r" stays unread: "\n" may follow it.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
LAST_WHITESPACE = re.compile(r"\s(?=\S*$)")
# Memory bounds. A line longer than this is read in segments cut at whitespace (a segment is
# never a heading nor a table row); a paragraph longer than this has its finished sentences
# packed early. Both give the same chunks as reading the whole text, except for a single "word"
# or a table row longer than this.
MAX_PENDING_CHARS = 64 * 1024


class Measure(Protocol):
    """How chunks are measured: in characters, or in an embedding model's tokens."""

    unit: str
    # What joining two texts with a space or a newline adds to their summed lengths.
    joiner_length: int

    def length(self, text: str) -> int: ...

    def head(self, text: str, limit: int) -> str:
        """The longest non-empty prefix of ``text`` whose length is at most ``limit``."""
        ...


class Characters:
    unit = "characters"
    joiner_length = 1

    def length(self, text: str) -> int:
        return len(text)

    def head(self, text: str, limit: int) -> str:
        return text[:limit]


class Tokens:
    """Word pieces of a ``tokenizers`` tokenizer without special tokens or truncation.

    The embedding model's pre-tokenizer splits at whitespace, so the token count of texts joined
    by a space or a newline is the sum of their counts: sentences are measured once, then added.
    """

    unit = "tokens"
    joiner_length = 0

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer

    def length(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def head(self, text: str, limit: int) -> str:
        offsets = self._tokenizer.encode(text, add_special_tokens=False).offsets
        if len(offsets) <= limit:
            return text
        return text[: max(offsets[limit - 1][1], 1)]


CHARACTERS = Characters()


def _split_long(unit: str, size: int, measure: Measure) -> list[str]:
    """Cut a unit longer than ``size`` at word boundaries (mid-word only as a last resort)."""
    pieces: list[str] = []
    current: list[str] = []
    current_length = 0
    for word in unit.split(" "):
        word_length = measure.length(word)
        while word_length > size:
            if current:
                pieces.append(" ".join(current))
                current, current_length = [], 0
            head = measure.head(word, size)
            pieces.append(head)
            word = word[len(head) :]
            word_length = measure.length(word)
        if not word:
            continue
        joined = current_length + measure.joiner_length + word_length if current else word_length
        if joined > size:
            pieces.append(" ".join(current))
            current, current_length = [word], word_length
        else:
            current.append(word)
            current_length = joined
    if current:
        pieces.append(" ".join(current))
    return pieces


class _Unit(NamedTuple):
    text: str
    length: int
    block: bool  # a table or a piece of one: on lines of its own, never carried as overlap


class _Section:
    """Packs the sentences and tables of one Markdown section into chunks that start with its
    heading. Sentences are joined by spaces; a table (a block) stands on lines of its own.

    Each chunk after the first starts with the last sentences of the previous one, up to
    ``overlap``, so that a fact spanning a boundary is whole in at least one chunk; a table is
    never carried over.
    """

    def __init__(self, heading: str, *, size: int, overlap: int, measure: Measure) -> None:
        self._measure = measure
        self.title = measure.head(heading, size // 4) if heading else ""
        title_length = measure.length(self.title) + measure.joiner_length if self.title else 0
        self.room = size - title_length
        self._overlap = min(overlap, self.room - 1)
        self._current: list[_Unit] = []
        self._packed_any = False

    def _joined_length(self, units: list[_Unit]) -> int:
        joiners = self._measure.joiner_length * (len(units) - 1)
        return sum(unit.length for unit in units) + joiners

    def _chunk(self) -> str:
        packed = self._current[0].text
        for previous, unit in itertools.pairwise(self._current):
            packed += ("\n" if previous.block or unit.block else " ") + unit.text
        return f"{self.title}\n{packed}" if self.title else packed

    def add(self, sentence: str) -> list[str]:
        """Chunks completed by adding ``sentence``."""
        length = self._measure.length(sentence)
        if length <= self.room:
            return self.add_unit(sentence, length)
        chunks: list[str] = []
        for piece in _split_long(sentence, self.room, self._measure):
            chunks += self.add_unit(piece, self._measure.length(piece))
        return chunks

    def add_block(self, block: str, length: int) -> list[str]:
        """Chunks completed by adding ``block`` (lines kept); cut at words like an overlong
        sentence when longer than the room."""
        if length <= self.room:
            return self.add_unit(block, length, block=True)
        return self.add(" ".join(block.split()))

    def add_unit(self, unit: str, length: int, *, block: bool = False) -> list[str]:
        """Chunks completed by adding ``unit``, which fits the room."""
        self._packed_any = True
        chunks: list[str] = []
        added = _Unit(unit, length, block)
        if self._current and self._joined_length([*self._current, added]) > self.room:
            chunks.append(self._chunk())
            carried: list[_Unit] = []
            for previous in reversed(self._current):
                candidate = [previous, *carried]
                if (
                    previous.block
                    or self._joined_length(candidate) > self._overlap
                    or self._joined_length([*candidate, added]) > self.room
                ):
                    break
                carried = candidate
            self._current = carried
        self._current.append(added)
        return chunks

    def close(self) -> list[str]:
        """The last chunk; a heading without text is a chunk of its own."""
        if self._current:
            return [self._chunk()]
        return [self.title] if self.title and not self._packed_any else []


class _Table:
    """One Markdown table as blocks for its section: the whole table when it fits ``room``, else
    pieces cut between rows, each starting with the header row and the separator. A row too long
    to follow them is a block of its own (cut at words by the section when longer than the room).
    Only the piece being filled is held."""

    def __init__(self, head: str, *, room: int, measure: Measure) -> None:
        self._head = head  # the header row and the separator, on two lines
        self._room = room
        self._measure = measure
        self._head_length = measure.length(head)
        self._head_out = False  # whether a block with the head was given out
        self._rows: list[str] = []
        self._length = self._head_length  # of the head and the rows held

    def add(self, row: str) -> list[tuple[str, int]]:
        """Blocks completed by adding ``row``."""
        length = self._measure.length(row)
        joiner = self._measure.joiner_length
        if self._length + joiner + length <= self._room:
            self._rows.append(row)
            self._length += joiner + length
            return []
        blocks = self._piece()
        if self._head_length + joiner + length <= self._room:
            self._rows, self._length = [row], self._head_length + joiner + length
        else:
            blocks.append((row, length))
        return blocks

    def close(self) -> list[tuple[str, int]]:
        return self._piece()

    def _piece(self) -> list[tuple[str, int]]:
        """The head and the rows held as one block; nothing when no row is held and the head
        was already given out."""
        if not self._rows and self._head_out:
            return []
        block = ("\n".join([self._head, *self._rows]), self._length)
        self._head_out = True
        self._rows, self._length = [], self._head_length
        return [block]


def _collapsed(line: str) -> str:
    return " ".join(line.split())


def _strip_line_break(line: str) -> str:
    return line[:-2] if line.endswith("\r\n") else line[:-1]


class Chunker:
    """Chunks of at most ``size`` (in ``measure``'s unit) that never straddle a Markdown section,
    from text fed in pieces: ``feed`` returns the chunks each piece completes, ``close`` the rest.

    Each chunk starts with its section's heading, so a passage carries its topic with it (a small
    model then reads "Storage > One owner for Milvus Lite" before the sentences). Within a
    section, sentences are packed with ``overlap`` carried into the next chunk. Paragraphs are
    separated by blank lines; a paragraph's whitespace is collapsed.

    A Markdown table (a header row, a separator row and rows, each line starting with a pipe; it
    ends at the first other line) is never split across chunks when it fits one: longer, it is
    cut between rows, each piece repeating the header row. Its rows stay on lines of their own.
    """

    def __init__(self, *, size: int, overlap: int, measure: Measure = CHARACTERS) -> None:
        if overlap >= size:
            raise ValueError("overlap must be smaller than size")
        self._size = size
        self._overlap = overlap
        self._measure = measure
        self._carry = ""  # the text after the last line break fed so far
        self._carry_continues_line = False  # part of the carry's line was already read
        self._paragraph: list[str] = []  # whitespace-collapsed lines of the open paragraph
        self._paragraph_chars = 0
        self._section = self._new_section("")
        self._table_head: str | None = None  # a row that opens a table if a separator follows
        self._table: _Table | None = None

    def _new_section(self, heading: str) -> _Section:
        return _Section(heading, size=self._size, overlap=self._overlap, measure=self._measure)

    def feed(self, piece: str) -> list[str]:
        lines = (self._carry + piece).splitlines(keepends=True)
        self._carry = ""
        if lines and (lines[-1][-1] not in LINE_BREAKS or lines[-1][-1] == "\r"):
            self._carry = lines.pop()
        chunks: list[str] = []
        for line in lines:
            chunks += self._line(_strip_line_break(line), self._carry_continues_line)
            self._carry_continues_line = False
        while len(self._carry) > MAX_PENDING_CHARS:
            cut = LAST_WHITESPACE.search(self._carry, 0, MAX_PENDING_CHARS)
            end, resume = (cut.start(), cut.end()) if cut else (MAX_PENDING_CHARS,) * 2
            chunks += self._line(self._carry[:end], continues=True)
            self._carry = self._carry[resume:]
            self._carry_continues_line = True
        return chunks

    def close(self) -> list[str]:
        last_line = self._carry.removesuffix("\r")
        chunks = self._line(last_line, self._carry_continues_line) if self._carry else []
        self._carry = ""
        chunks += self._text_line(self._table_head, False) if self._table_head else []
        self._table_head = None
        return chunks + self._close_table() + self._end_paragraph() + self._section.close()

    def _line(self, line: str, continues: bool) -> list[str]:
        chunks: list[str] = []
        row = not continues and TABLE_ROW.match(line) is not None
        if self._table_head is not None:
            head, self._table_head = self._table_head, None
            if row and TABLE_SEPARATOR.match(line):
                self._table = _Table(
                    f"{head}\n{_collapsed(line)}", room=self._section.room, measure=self._measure
                )
                return self._end_paragraph()
            chunks += self._text_line(head, False)
        if self._table is not None:
            if row:
                return chunks + self._add_blocks(self._table.add(_collapsed(line)))
            chunks += self._close_table()
        if row:
            self._table_head = _collapsed(line)
            return chunks
        return chunks + self._text_line(line, continues)

    def _add_blocks(self, blocks: list[tuple[str, int]]) -> list[str]:
        chunks: list[str] = []
        for block, length in blocks:
            chunks += self._section.add_block(block, length)
        return chunks

    def _close_table(self) -> list[str]:
        if self._table is None:
            return []
        table, self._table = self._table, None
        return self._add_blocks(table.close())

    def _text_line(self, line: str, continues: bool) -> list[str]:
        if not continues:
            heading = HEADING.match(line)
            if heading:
                chunks = self._end_paragraph() + self._section.close()
                self._section = self._new_section(heading.group(1).strip())
                return chunks
            if not line.strip():
                return self._end_paragraph()
        words = _collapsed(line)
        if not words:
            return []
        self._paragraph.append(words)
        self._paragraph_chars += len(words) + 1
        return self._pack_finished() if self._paragraph_chars > MAX_PENDING_CHARS else []

    def _end_paragraph(self) -> list[str]:
        chunks: list[str] = []
        for sentence in split_sentences(" ".join(self._paragraph)):
            chunks += self._section.add(sentence)
        self._paragraph, self._paragraph_chars = [], 0
        return chunks

    def _pack_finished(self) -> list[str]:
        """Pack a long open paragraph's finished sentences (more text cannot change them) and
        the finished pieces of its last sentence when that alone is too long; keep the rest."""
        *finished, last = split_sentences(" ".join(self._paragraph))
        chunks: list[str] = []
        for sentence in finished:
            chunks += self._section.add(sentence)
        if len(last) > MAX_PENDING_CHARS:
            *pieces, last = _split_long(last, self._section.room, self._measure)
            for piece in pieces:
                chunks += self._section.add_unit(piece, self._measure.length(piece))
        self._paragraph, self._paragraph_chars = [last], len(last) + 1
        return chunks


def chunk_text(text: str, *, size: int, overlap: int, measure: Measure = CHARACTERS) -> list[str]:
    """The chunks of a whole text (see :class:`Chunker`)."""
    chunker = Chunker(size=size, overlap=overlap, measure=measure)
    return [*chunker.feed(text), *chunker.close()]

"""The packaged model's tokenizer: BERT's uncased WordPiece, read from its ``tokenizer.json``.

The ``tokenizers`` library does this in Rust, but it requires the model hub client (and its
transfer client) at install time, about 28 MB that a model shipped in a package never uses.
This module gives the same token ids for this one tokenizer configuration
(``BertNormalizer`` with clean-up, CJK spacing, accent stripping and lower case;
``BertPreTokenizer``; ``WordPiece`` with ``##`` continuations; ``[CLS] … [SEP]``), checked
against the library on real transcripts and generated text (tests/recall/test_packaged_model.py).
Anything else in a ``tokenizer.json`` is refused rather than tokenized differently.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lore.errors import BackendUnavailable

# Unicode's White_Space property (what the library's Rust code tests), as characters.
WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                        "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
       (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
# Characters the library's Unicode tables (older than Python 3.11's Unicode 14) do not know:
# it keeps them as ordinary letters (neither removed, nor punctuation, nor accents). Found by
# comparing every code point with the library (tests/recall/test_packaged_model.py).
UNKNOWN_TO_LIBRARY = (
    (0x61D, 0x61D), (0x7FD, 0x7FD), (0x890, 0x891), (0x898, 0x89F), (0x8CA, 0x8E2),
    (0x9FD, 0x9FE), (0xA76, 0xA76), (0xAFA, 0xAFF), (0xB55, 0xB55), (0xC04, 0xC04),
    (0xC3C, 0xC3C), (0xC77, 0xC77), (0xC84, 0xC84), (0xD00, 0xD00), (0xD3B, 0xD3C),
    (0xD81, 0xD81), (0xEBA, 0xEBA), (0x166D, 0x166D), (0x1734, 0x1734), (0x180F, 0x180F),
    (0x1885, 0x1886), (0x1ABF, 0x1ACE), (0x1B7D, 0x1B7E), (0x1DF6, 0x1DFB), (0x2E43, 0x2E4F),
    (0x2E52, 0x2E5D), (0xA82C, 0xA82C), (0xA8C5, 0xA8C5), (0xA8FF, 0xA8FF), (0xA9BD, 0xA9BD),
    (0x10D24, 0x10D27), (0x10EAB, 0x10EAD), (0x10F46, 0x10F50), (0x10F55, 0x10F59), (0x10F82, 0x10F89),
    (0x11070, 0x11070), (0x11073, 0x11074), (0x110C2, 0x110C2), (0x110CD, 0x110CD), (0x111C9, 0x111C9),
    (0x111CF, 0x111CF), (0x1123E, 0x1123E), (0x1133B, 0x1133B), (0x11438, 0x1143F), (0x11442, 0x11444),
    (0x11446, 0x11446), (0x1144B, 0x1144F), (0x1145A, 0x1145B), (0x1145D, 0x1145E), (0x11660, 0x1166C),
    (0x116B9, 0x116B9), (0x1182F, 0x11837), (0x11839, 0x1183B), (0x1193B, 0x1193C), (0x1193E, 0x1193E),
    (0x11943, 0x11946), (0x119D4, 0x119D7), (0x119DA, 0x119DB), (0x119E0, 0x119E0), (0x119E2, 0x119E2),
    (0x11A01, 0x11A0A), (0x11A33, 0x11A38), (0x11A3B, 0x11A47), (0x11A51, 0x11A56), (0x11A59, 0x11A5B),
    (0x11A8A, 0x11A96), (0x11A98, 0x11A9C), (0x11A9E, 0x11AA2), (0x11C30, 0x11C36), (0x11C38, 0x11C3D),
    (0x11C3F, 0x11C3F), (0x11C41, 0x11C45), (0x11C70, 0x11C71), (0x11C92, 0x11CA7), (0x11CAA, 0x11CB0),
    (0x11CB2, 0x11CB3), (0x11CB5, 0x11CB6), (0x11D31, 0x11D36), (0x11D3A, 0x11D3A), (0x11D3C, 0x11D3D),
    (0x11D3F, 0x11D45), (0x11D47, 0x11D47), (0x11D90, 0x11D91), (0x11D95, 0x11D95), (0x11D97, 0x11D97),
    (0x11EF3, 0x11EF4), (0x11EF7, 0x11EF8), (0x11FFF, 0x11FFF), (0x12FF1, 0x12FF2), (0x13430, 0x13438),
    (0x16E97, 0x16E9A), (0x16F4F, 0x16F4F), (0x16FE2, 0x16FE2), (0x16FE4, 0x16FE4), (0x1CF00, 0x1CF2D),
    (0x1CF30, 0x1CF46), (0x1E000, 0x1E006), (0x1E008, 0x1E018), (0x1E01B, 0x1E021), (0x1E023, 0x1E024),
    (0x1E026, 0x1E02A), (0x1E130, 0x1E136), (0x1E2AE, 0x1E2AE), (0x1E2EC, 0x1E2EF), (0x1E944, 0x1E94A),
    (0x1E95E, 0x1E95F),
)
_UNKNOWN = frozenset(c for lo, hi in UNKNOWN_TO_LIBRARY for c in range(lo, hi + 1))
PUNCTUATION_TO_LIBRARY = frozenset({0x166D, 0x111C9})  # categories that changed since
ACCENT_TO_LIBRARY = frozenset({0x1734})
# ASCII text, the common case, in one pass: runs of letters and digits, and each punctuation
# character on its own (every printable ASCII character that is neither is punctuation).
ASCII_PIECES = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")
ASCII_DROPPED = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # control characters


@lru_cache(maxsize=4096)
def _kind(ch: str) -> str:
    """'drop', 'space', 'punct', 'cjk' or 'word' for one character after clean-up rules."""
    if ch in "\t\n\r":
        return "space"
    if ord(ch) in PUNCTUATION_TO_LIBRARY:
        return "punct"
    if ord(ch) in _UNKNOWN:
        return "word"
    cat = unicodedata.category(ch)
    if cat in ("Cc", "Cf", "Co", "Cs") or ch == "\ufffd":  # removed, as is U+FFFD; an
        return "drop"  # unassigned character (Cn) is kept, as the library keeps it
    if ch in WHITE_SPACE:
        return "space"
    code = ord(ch)
    if any(lo <= code <= hi for lo, hi in CJK):
        return "cjk"
    if cat[0] == "P" or (code < 128 and not ch.isalnum()):
        return "punct"
    return "word"


def _words(text: str) -> list[str]:
    """Normalised, pre-tokenized words (BertNormalizer then BertPreTokenizer)."""
    if text.isascii():
        return ASCII_PIECES.findall(ASCII_DROPPED.sub("", text).lower())
    return [w for piece in _pieces(text) for w in _split(_fold(piece))]


def _pieces(text: str) -> list[str]:
    """Runs of word characters, and each punctuation or CJK character alone; white space and
    dropped characters left out (a dropped one inside a word joins its halves)."""
    out: list[str] = []
    current = ""
    for ch in text:
        kind = _kind(ch)
        if kind == "word":
            current += ch
        elif kind != "drop":
            if current:
                out.append(current)
                current = ""
            if kind != "space":
                out.append(ch)
    if current:
        out.append(current)
    return out


def _fold(word: str) -> str:
    """Accents stripped (NFD without non-spacing marks), then lower case."""
    if word.isascii():
        return word.lower()
    return "".join(c for c in unicodedata.normalize("NFD", word)
                   if (unicodedata.category(c) != "Mn" or ord(c) in _UNKNOWN)
                   and ord(c) not in ACCENT_TO_LIBRARY).lower()


def _split(word: str) -> list[str]:
    """Folding can produce new whitespace or punctuation (rare): split on them again."""
    if word.isascii():
        return ASCII_PIECES.findall(word) if not word.isalnum() else [word]
    return _pieces(word)


@dataclass(frozen=True, slots=True)
class Encoding:
    ids: list[int]
    length: int  # tokens before the padding

    @property
    def attention_mask(self) -> list[int]:
        return [1] * self.length + [0] * (len(self.ids) - self.length)

    @property
    def type_ids(self) -> list[int]:
        return [0] * len(self.ids)


class WordPiece:
    """Token ids as the ``tokenizers`` library gives them for a BERT uncased tokenizer."""

    def __init__(self, vocab: dict[str, int], specials: dict[str, int], *, unk: str = "[UNK]",
                 prefix: str = "##", max_chars: int = 100, max_length: int = 256) -> None:
        self.vocab = vocab
        self.specials = specials
        self.unk = vocab[unk]
        self.cls, self.sep, self.pad = vocab["[CLS]"], vocab["[SEP]"], vocab["[PAD]"]
        self.prefix = prefix
        self.max_chars = max_chars
        self.max_length = max_length
        self._special = (re.compile("|".join(re.escape(s) for s in sorted(specials, key=len,
                                                                         reverse=True)))
                         if specials else None)
        self._pieces = lru_cache(maxsize=65_536)(self._word_ids)

    @classmethod
    def from_file(cls, path: Path, max_length: int) -> WordPiece:
        data = json.loads(path.read_text(encoding="utf-8"))
        model, norm, pre = data.get("model", {}), data.get("normalizer") or {}, data.get(
            "pre_tokenizer") or {}
        expected = (model.get("type") == "WordPiece" and norm.get("type") == "BertNormalizer"
                    and norm.get("lowercase") is True and norm.get("clean_text") is True
                    and norm.get("handle_chinese_chars") is True
                    and norm.get("strip_accents") in (None, True)
                    and pre.get("type") == "BertPreTokenizer")
        if not expected:
            raise BackendUnavailable(f"{path} is not a BERT uncased WordPiece tokenizer; Lore's "
                                     "packaged tokenizer reads only that kind")
        specials = {t["content"]: int(t["id"]) for t in data.get("added_tokens", [])
                    if not t.get("normalized", True)}
        return cls(model["vocab"], specials, unk=model.get("unk_token", "[UNK]"),
                   prefix=model.get("continuing_subword_prefix", "##"),
                   max_chars=int(model.get("max_input_chars_per_word", 100)),
                   max_length=max_length)

    def _word_ids(self, word: str) -> tuple[int, ...]:
        """Greedy longest match from the left; a word with any unmatched part is [UNK]."""
        if len(word) > self.max_chars:
            return (self.unk,)
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while end > start:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return (self.unk,)
            ids.append(found)
            start = end
        return tuple(ids)

    def tokens(self, text: str) -> list[int]:
        """The ids of a text, special tokens aside (they are matched in the raw text)."""
        parts = [text] if self._special is None else self._special.split(text)
        marks = [] if self._special is None else self._special.findall(text)
        ids: list[int] = []
        for i, part in enumerate(parts):
            for word in _words(part):
                ids.extend(self._pieces(word))
            if i < len(marks):
                ids.append(self.specials[marks[i]])
        return ids

    def encode(self, text: str) -> Encoding:
        body = self.tokens(text)[: self.max_length - 2]
        return Encoding([self.cls, *body, self.sep], len(body) + 2)

    def encode_batch(self, texts: list[str]) -> list[Encoding]:
        """Each text cut to ``max_length`` tokens and padded to the longest of the batch."""
        encoded = [self.encode(t) for t in texts]
        width = max((len(e.ids) for e in encoded), default=0)
        return [Encoding(e.ids + [self.pad] * (width - len(e.ids)), e.length) for e in encoded]

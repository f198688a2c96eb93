"""Literals every match of a case-insensitive pattern must contain: a test far cheaper than the search.

`regex` searches a case-insensitive pattern at every position of the text, which for the answer
metrics' bundled phrase patterns (`core.answer_patterns`) over a few thousand characters costs
tens of microseconds each, although almost every answer holds none of their words. `need(pattern)`
reads the pattern's syntax and returns the literals a match cannot do without, as an AND of ORs:
every group holds strings of which a match contains at least one ("I don't know" needs "know").
`admits(needs, fold(text))` tests them with plain substring searches; when it says no, the pattern
cannot match `text`, so the search can be skipped (and the pattern need not even be compiled).

The reading is conservative: anything it does not model (a class with a range, an inline flag, a
back-reference, an unknown escape ...) needs nothing, so the answer is only ever "cannot match" when
that is certain. Literals are lower case, and `fold` brings a text to the same case with the
characters `regex` matches to an ASCII letter case-insensitively although `str.lower` gives
another one ("\u0130" matches "i", "\u0131" matches "I", "\u017f" matches "s"; a test checks the
list against every code point).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Needs = tuple[tuple[str, ...], ...]
"""An AND of ORs of lower-case literals: a match contains one string of every group."""

_STRAYS = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"))
_MAX_EXACT = 64  # the most strings an exact reading of an alternation keeps before it turns into needs
_MAX_CROSS = 4  # ... of a sequence: past it, the stretch so far becomes one group and a new one starts
_MAX_GROUPS = 2  # the most OR-groups a pattern's needs keep (the most telling ones)
_WORDS = re.compile(r"[a-z]+")
_SELECTIVE = 5  # a word this long is taken as rare enough: among such groups, fewer literals win


def fold(text: str) -> str:
    """`text` as `admits` reads it: lower case, the three stray letters of `_STRAYS` to ASCII."""
    if not text.isascii():
        for stray, ascii_letter in _STRAYS:
            if stray in text:
                text = text.replace(stray, ascii_letter)
    return text.lower()


def admits(needs: Needs, folded: str, seen: dict[str, bool] | None = None) -> bool:
    """False when a pattern with `needs` cannot match the text whose `fold` is `folded`.

    `seen`, when given, holds the substring tests already made on `folded` and keeps the new
    ones: patterns of one set share many literals ("document", "context" ...), and over a long
    text each test that fails reads all of it."""
    for group in needs:
        for literal in group:
            if seen is None:
                if literal in folded:
                    break
                continue
            found = seen.get(literal)
            if found is None:
                found = seen[literal] = literal in folded
            if found:
                break
        else:
            return False
    return True


class _Unsupported(Exception):
    """The pattern uses syntax this reading does not model: it needs nothing."""


@dataclass(frozen=True)
class _Exact:
    """The node matches exactly one of these strings (lower case; "" for an empty match)."""

    strings: frozenset[str]


@dataclass(frozen=True)
class _Needs:
    """The node's matches contain one string of each group (no group: nothing is known)."""

    groups: tuple[frozenset[str], ...]


_Info = _Exact | _Needs
_EMPTY = _Exact(frozenset({""}))
_ANY = _Needs(())

_PLAIN = re.compile(r"[^\\()\[\]{}|?*+.^$]+")  # a run of characters that stand for themselves
_ZERO_WIDTH_ESCAPES = set("bBAZ")
_CLASS_ESCAPES = set("wWsSdD")
_CHAR_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}


def need(pattern: str) -> Needs:
    """The literal groups every case-insensitive match of `pattern` contains (see the module);
    () when nothing is known."""
    try:
        info = _Parser(pattern).parse()
    except _Unsupported:
        return ()
    groups = set(_groups(info))
    shared = {_common(g) for g in groups if len(g) > 1}
    groups |= {frozenset({s}) for s in shared if len(s) >= 3}
    chosen = sorted(groups, key=_telling, reverse=True)[:_MAX_GROUPS]
    return tuple(tuple(sorted(g)) for g in chosen)


def _telling(group: frozenset[str]) -> tuple[int, int, int, list[str]]:
    """How much a group rules out for what it costs (one substring search per literal): the
    longest word in its weakest literal, up to `_SELECTIVE` letters ("the context" rules out more
    than " in the "), then fewer literals (then a fixed order)."""
    weakest = min(max((len(w) for w in _WORDS.findall(s)), default=0) for s in group)
    return min(weakest, _SELECTIVE), -len(group), min(len(s) for s in group), sorted(group)


def _common(group: frozenset[str]) -> str:
    """The longest string every member of `group` contains (a literal each match needs too)."""
    first = min(sorted(group), key=len)
    for size in range(len(first), 0, -1):
        for start in range(len(first) - size + 1):
            part = first[start:start + size]
            if all(part in s for s in group):
                return part
    return ""


def _minimal(strings: Iterable[str]) -> frozenset[str]:
    """The strings without any that contains another (containing one of the rest is the same test)."""
    ordered = sorted(set(strings), key=len)
    kept: list[str] = []
    for s in ordered:
        if not any(k in s for k in kept):
            kept.append(s)
    return frozenset(kept)


def _groups(info: _Info) -> tuple[frozenset[str], ...]:
    if isinstance(info, _Needs):
        return info.groups
    if not info.strings or "" in info.strings:
        return ()
    return (_minimal(info.strings),)


def _best(info: _Info) -> frozenset[str] | None:
    groups = _groups(info)
    return max(groups, key=_telling) if groups else None


def _literal(char: str) -> _Info:
    """One pattern character: ASCII, or a character without case, reads as itself in lower case;
    any other may match characters `fold` does not bring to it, so it needs nothing."""
    if char.isascii() or (char.lower() == char and char.upper() == char):
        return _Exact(frozenset({char.lower()}))
    return _ANY


def _concat(items: Sequence[_Info]) -> _Info:
    """A sequence: adjacent exact items multiply out (while small); the rest add their groups."""
    groups: list[frozenset[str]] = []
    run: frozenset[str] | None = frozenset({""})  # the strings of the current stretch of exact items
    all_exact = True
    for item in items:
        if isinstance(item, _Exact) and run is not None and len(run) * len(item.strings) <= _MAX_CROSS:
            run = frozenset(a + b for a in run for b in item.strings)
            continue
        all_exact = False
        if run is not None:
            groups.extend(_groups(_Exact(run)))
        if isinstance(item, _Exact):
            run = item.strings
        else:
            run = None
            groups.extend(item.groups)
    if all_exact and run is not None:
        return _Exact(run)
    if run is not None:
        groups.extend(_groups(_Exact(run)))
    return _Needs(tuple(groups))


def _alternate(branches: Sequence[_Info]) -> _Info:
    """Alternatives: exact ones unite (while small); else each branch's most telling group joins
    one group, and a branch that needs nothing makes the whole need nothing."""
    exact = [b.strings for b in branches if isinstance(b, _Exact)]
    if len(exact) == len(branches):
        union = frozenset().union(*exact)
        if len(union) <= _MAX_EXACT:
            return _Exact(union)
    chosen = [c for c in (_best(b) for b in branches) if c is not None]
    if len(chosen) < len(branches):
        return _ANY
    return _Needs((_minimal(s for c in chosen for s in c),))


def _repeat(info: _Info, least: int, most: int | None) -> _Info:
    if least == 1 and most == 1:
        return info
    if least == 0 and most == 1 and isinstance(info, _Exact):
        return _Exact(info.strings | {""})
    if least == 0:
        return _ANY
    return _Needs(_groups(info))


class _Parser:
    """A recursive reading of the `regex` syntax the bundled patterns use; anything else raises
    _Unsupported."""

    def __init__(self, pattern: str):
        self.text = pattern
        self.at = 0

    def parse(self) -> _Info:
        info = self._alternation()
        if self.at != len(self.text):
            raise _Unsupported(self.text)
        return info

    def _peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def _alternation(self) -> _Info:
        branches = [self._sequence()]
        while self._peek() == "|":
            self.at += 1
            branches.append(self._sequence())
        return branches[0] if len(branches) == 1 else _alternate(branches)

    def _sequence(self) -> _Info:
        items: list[_Info] = []
        while self._peek() not in ("", "|", ")"):
            plain = _PLAIN.match(self.text, self.at)
            end = plain.end() if plain else self.at
            if end < len(self.text) and self.text[end] in "?*+{":
                end -= 1  # a quantifier takes the last character alone
            if end - self.at >= 2:
                run = self.text[self.at:end]
                if run.isascii():  # one string: the same as the sequence of its characters
                    items.append(_Exact(frozenset({run.lower()})))
                else:
                    items.extend(_literal(c) for c in run)
                self.at = end
                continue
            atom = self._atom()
            items.append(self._quantified(atom))
        return _concat(items)

    def _quantified(self, atom: _Info) -> _Info:
        char = self._peek()
        if char == "?":
            least, most = 0, 1
        elif char == "*":
            least, most = 0, None
        elif char == "+":
            least, most = 1, None
        elif char == "{":
            least, most = self._braces()
            self.at -= 1
        else:
            return atom
        self.at += 1
        if self._peek() in ("?", "+"):  # lazy or possessive: the same strings can match
            self.at += 1
        if self._peek() in ("?", "*", "+", "{"):
            raise _Unsupported(self.text)
        return _repeat(atom, least, most)

    def _braces(self) -> tuple[int, int | None]:
        end = self.text.find("}", self.at)
        if end < 0:
            raise _Unsupported(self.text)
        body = self.text[self.at + 1:end]
        low, comma, high = body.partition(",")
        if not low.isdigit() or (high and not high.isdigit()) or (not comma and high):
            raise _Unsupported(self.text)
        self.at = end + 1
        return int(low), (int(high) if high else (None if comma else int(low)))

    def _atom(self) -> _Info:
        char = self._peek()
        self.at += 1
        if char == "(":
            return self._group()
        if char == "[":
            return self._class()
        if char == "\\":
            return self._escape()
        if char in ("^", "$"):
            return _EMPTY
        if char == ".":
            return _ANY
        if char in ("?", "*", "+", "{", ")"):
            raise _Unsupported(self.text)
        return _literal(char)

    def _group(self) -> _Info:
        zero_width = False
        if self.text.startswith("?", self.at):
            head = self.text[self.at:self.at + 3]
            if head.startswith(("?:", "?>")):
                self.at += 2
            elif head.startswith(("?=", "?!")):
                self.at += 2
                zero_width = True
            elif head in ("?<=", "?<!"):
                self.at += 3
                zero_width = True
            elif head.startswith("?P<"):
                self._skip_name(self.at + 3)
            else:
                raise _Unsupported(self.text)
        inner = self._alternation()
        if self._peek() != ")":
            raise _Unsupported(self.text)
        self.at += 1
        return _EMPTY if zero_width else inner

    def _skip_name(self, start: int) -> None:
        end = self.text.find(">", start)
        if end < 0 or not self.text[start:end].isidentifier():
            raise _Unsupported(self.text)
        self.at = end + 1

    def _class(self) -> _Info:
        """A set: the plain ones (no range, escape, negation or nesting) are their characters."""
        start = self.at + (1 if self.text.startswith("^", self.at) else 0)
        end = self.text.find("]", start + 1 if self.text.startswith("]", start) else start)
        if end < 0:
            raise _Unsupported(self.text)
        body = self.text[self.at:end]
        if "\\" in body or "[" in body:
            raise _Unsupported(self.text)
        self.at = end + 1
        if body.startswith("^") or "-" in body:
            return _ANY
        infos = [_literal(c) for c in body]
        if any(isinstance(i, _Needs) for i in infos):
            return _ANY
        return _alternate(infos)

    def _escape(self) -> _Info:
        char = self._peek()
        if not char:
            raise _Unsupported(self.text)
        self.at += 1
        if char in _ZERO_WIDTH_ESCAPES:
            return _EMPTY
        if char in _CLASS_ESCAPES:
            return _ANY
        if char in ("p", "P"):  # a Unicode property, \p{L}
            end = self.text.find("}", self.at)
            if not self.text.startswith("{", self.at) or end < 0:
                raise _Unsupported(self.text)
            self.at = end + 1
            return _ANY
        if char in _CHAR_ESCAPES:
            return _literal(_CHAR_ESCAPES[char])
        if char in ("u", "x", "U"):
            width = {"u": 4, "x": 2, "U": 8}[char]
            digits = self.text[self.at:self.at + width]
            if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise _Unsupported(self.text)
            self.at += width
            return _literal(chr(int(digits, 16)))
        if char.isascii() and not char.isalnum():
            return _literal(char)
        raise _Unsupported(self.text)

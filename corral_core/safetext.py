"""The one policy for text that cannot be encoded: a lone UTF-16 surrogate becomes U+FFFD.

A lone surrogate (a code point in U+D800..U+DFFF that is not half of a pair) is a valid Python
`str` character but has no UTF-8 form, so a JSON response or an SQLite text column holding one
fails to encode. It arrives easily: a JSON body may spell it `"\\ud800"`, an LLM may emit one in a
tool-call argument, a file name decoded with `surrogateescape` holds some. We replace each with
U+FFFD, the Unicode replacement character, where text enters our records: request bodies
(`server/schemas.py`), every JSON response, and every row the store writer writes. A surrogate
*pair* is joined into the character it encodes. Every other string passes through unchanged.
"""

from __future__ import annotations

from typing import Any

__all__ = ["REPLACEMENT", "clean", "clean_text", "clip"]

REPLACEMENT = "\ufffd"


def clean_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (the same object when there is none)."""
    if text.isascii():  # O(1) in CPython: the common case costs nothing
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 can carry surrogates through ("surrogatepass"); decoding it back joins the pairs
        # and turns each lone one into U+FFFD.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def clean(value: Any) -> Any:
    """`value` with `clean_text` applied to every string in it, dict keys included.

    Dicts, lists and tuples are rebuilt only when something in them changed (tuples become lists,
    as JSON would make them); any other value is returned as it is.
    """
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new_key, new_item = clean(key), clean(item)
            changed = changed or new_key is not key or new_item is not item
            out[new_key] = new_item
        return out if changed else value
    if isinstance(value, (list, tuple)):
        items = [clean(item) for item in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return items
        return value
    return value


def clip(text: Any, limit: int, *, one_line: bool = False) -> str:
    """`text` (None: "") shortened for display, the one clipping rule of the engine and the TUI.

    `one_line=True` is for summaries (timelines, tables): whitespace runs, newlines included, become one
    space and the result is at most `limit` characters, the last an ellipsis. Otherwise (message and
    result panes) the first `limit` characters are kept and the cut is said: "… (N more characters)".
    """
    text = "" if text is None else str(text)
    if one_line:
        line = " ".join(text.split())
        return line if len(line) <= limit else line[: limit - 1] + "…"
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"

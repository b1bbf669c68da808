"""The one policy for text that cannot be encoded: a lone UTF-16 surrogate becomes U+FFFD.

A lone surrogate (a code point in U+D800..U+DFFF that is not half of a pair) is a valid Python
`str` character but has no UTF-8 form, so a JSON response or an SQLite text column holding one
fails to encode. It arrives easily: a JSON body may spell it `"\\ud800"`, an LLM may emit one in a
tool-call argument, a file name decoded with `surrogateescape` holds some. We replace each with
U+FFFD, the Unicode replacement character, where text enters our records: request bodies
(`server/schemas.py`), every JSON response, and every row the store writer writes. A surrogate
*pair* is joined into the character it encodes. Every other string passes through unchanged.

The same places keep secrets out (`redact`): every secret value we read (provider keys from the
environment, `.env` or `api_key_env`, header values and keys written in a spec, URL userinfo) is
registered with `register_secret`, and `clean` replaces each with `***`, as it does any
`scheme://user:password@` userinfo. So no stored error, event, spec copy or export, and no JSON
answer of the server, carries one.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, cast
from urllib.parse import unquote, urlsplit

__all__ = ["MASK", "REPLACEMENT", "clean", "clean_text", "clip", "install_log_redaction", "redact",
           "register_environment", "register_secret", "register_url_secrets"]

REPLACEMENT = "\ufffd"
MASK = "***"
MIN_SECRET_LENGTH = 8  # shorter values ("1", "true") would mask ordinary text; real keys are longer
SECRET_NAME = re.compile(r"(API_?KEY|_KEY$|^KEY$|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/\s@'\"<>]+@")
# `?password=…` in a URL, `password=…` in a libpq DSN: the value up to the next separator
_PASSWORD_VALUE = re.compile(r"(\b(?:password|passwd|pwd)=)(?!\*\*\*)[^&\s'\"#;,<>]+", re.IGNORECASE)


class _Secrets:
    """The secret values this process has read; `redact` masks them (thread-safe, cheap when empty)."""

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()

    def add(self, value: str) -> None:
        value = value.strip()
        if len(value) < MIN_SECRET_LENGTH or value in self._values:
            return
        with self._lock:
            self._values.add(value)
            ordered = sorted(self._values, key=len, reverse=True)  # a longer secret first: no partial mask
            self._pattern = re.compile("|".join(re.escape(v) for v in ordered))

    def redact(self, text: str) -> str:
        pattern = self._pattern
        if pattern is not None:
            text = pattern.sub(MASK, text)
        if "@" in text and "://" in text:
            text = _USERINFO.sub(r"\1" + MASK + "@", text)
        if "=" in text:
            text = _PASSWORD_VALUE.sub(r"\1" + MASK, text)
        return text


_SECRETS = _Secrets()


def register_secret(value: Any) -> None:
    """Remember `value` as a secret: from now on `clean`/`redact` write it as `***`."""
    if isinstance(value, str):
        value = value.strip()
        _SECRETS.add(value)
        _SECRETS.add(_base64(value))  # the form a Basic header or an encoded config carries
        if value.lower().startswith(("bearer ", "basic ")):
            register_secret(value[6:] if value[:6].lower() == "basic " else value[7:])


def _base64(value: str) -> str:
    return base64.b64encode(value.encode("utf-8", "surrogatepass")).decode("ascii")


def register_url_secrets(url: Any) -> None:
    """Register the userinfo (user:password) of `url` and its `password=` query value, if it has them."""
    if not isinstance(url, str) or ("@" not in url and "=" not in url):
        return
    try:
        parts = urlsplit(url)
    except ValueError:
        return
    if parts.password:
        for user, password in {(parts.username, parts.password),
                               (unquote(parts.username or ""), unquote(parts.password))}:
            register_secret(password)
            register_secret(f"{user}:{password}")  # httpx sends it as Basic base64(user:password)
    for match in _PASSWORD_VALUE.finditer(parts.query):
        register_secret(unquote(match.group(0)[len(match.group(1)):]))


def register_environment(environ: Mapping[str, str] | None = None, names: Iterable[str] = ()) -> None:
    """Register every variable whose name looks secret (`*_API_KEY`, `*TOKEN*`, ...) and those `names`."""
    environ = os.environ if environ is None else environ
    wanted = set(names)
    for name, value in list(environ.items()):
        if name in wanted or SECRET_NAME.search(name):
            register_secret(value)


def redact(text: str) -> str:
    """`text` with every registered secret (and its base64 form), every URL userinfo and every
    `password=` value replaced by `***`."""
    return _SECRETS.redact(text)


class _RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to logging's own error report
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True


def install_log_redaction() -> None:
    """Mask secrets in every log line this process writes (a filter on every handler of the root
    logger and on logging's last-resort handler, which writes unconfigured warnings to stderr)."""
    redacting = _RedactingFilter()
    for handler in [*logging.getLogger().handlers, logging.lastResort]:
        if handler is not None and not any(isinstance(f, _RedactingFilter) for f in handler.filters):
            handler.addFilter(redacting)


def clean_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD and every secret by `***` (the same object
    when there is neither)."""
    text = _SECRETS.redact(text)  # re.sub returns the same object when nothing matched
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
    return cast("str", text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)")

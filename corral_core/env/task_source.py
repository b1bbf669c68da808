"""Tasks from a file or a dataset instead of inline YAML: a suite's `tasks:` may name a source.

```yaml
tasks: tasks.jsonl                       # JSONL or CSV next to the suite file, default field names
tasks:
  source: hf://org/name?split=test&revision=4f2a...   # a Hugging Face dataset (the [hf] extra)
  fields: {id: qid, prompt: question, answer: target, metadata: [topic, level], tools: allowed_tools}
  sample: 50        # 50 rows drawn at random with `seed` (kept in source order)
  shuffle: true     # then shuffled with `seed`
  limit: 20         # then the first 20
  seed: 7
```

A column in `fields:` may be a path into nested values: `question[0][0].content`.
A source is a `.jsonl`, `.json` (an array of objects, or JSON Lines) or `.csv` file, a local dataset
folder (`datasets.save_to_disk` output, or a
folder of data files `datasets.load_dataset` reads) or `hf://org/name`. Each row becomes one task
entry (the same keys as an inline task) and is checked like one: a bad row is a `UserError` naming
the file and its line (files) or row (datasets).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import random
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from corral_core.errors import UserError
from corral_core.yamlfile import KeyPath, YamlDocument

SOURCE_KEYS = {
    "source": "a .jsonl or .csv file, a local dataset folder, or hf://org/name?split=...&revision=...",
    "fields": "which column (or path, e.g. question[0][0].content) holds each task field: {id: ..., prompt: ...}",
    "limit": "keep the first N rows (after sample and shuffle)",
    "sample": "keep N rows drawn at random with `seed`",
    "shuffle": "shuffle the rows with `seed`",
    "seed": "the random seed of `sample` and `shuffle` (default 0)",
    "split": "the dataset split (datasets only; also ?split= in an hf:// reference)",
    "revision": "the dataset revision, a commit or tag (hf:// only; also ?revision=)",
    "config": "the dataset configuration name (hf:// only; also ?config=)",
}
# task field -> the column it is read from unless `fields:` says otherwise
DEFAULT_FIELDS = {"id": "id", "prompt": "prompt", "answer": "answer", "metadata": "metadata", "tools": "tools",
                  "scoring": "scoring", "solvable": "solvable", "depends_on": "depends_on",
                  "description": "description", "correct_tools": "correct_tools"}
OPTIONAL_FIELDS = ("answer", "metadata", "tools", "scoring", "description", "depends_on", "solvable",
                   "correct_tools")
HF_SCHEME = "hf://"
HF_EXTRA_HINT = "install the Hugging Face extra: pip install 'corral-tui[hf]'"


@dataclass
class TaskSource:
    """A parsed `tasks:` source reference (see the module docstring)."""

    source: str
    fields: dict[str, str | list[str]] = field(default_factory=lambda: dict(DEFAULT_FIELDS))
    limit: int | None = None
    sample: int | None = None
    shuffle: bool = False
    seed: int = 0
    split: str | None = None
    revision: str | None = None
    config: str | None = None
    explicit: frozenset[str] = frozenset()  # task fields the user mapped (a missing column is then an error)


@dataclass
class Row:
    """One source row: where it is (for messages) and its values."""

    where: str  # "line 7" (a file) or "row 7" (a dataset)
    values: Mapping[str, Any]


class RowSite:
    """What `suite._load_task` reports errors through, for a row: names the source, its line and column."""

    def __init__(self, file: str, row: Row, fields: Mapping[str, str | list[str]]) -> None:
        self.file, self.row, self.fields = file, row, fields

    def error(self, key_path: KeyPath, problem: str, fix: str | None = None) -> UserError:
        where = self.row.where
        task_field = next((part for part in key_path if isinstance(part, str)), None)
        column = self.fields.get(task_field) if task_field else None
        if isinstance(column, str):
            where += f", column {column!r}" + (f" ({task_field})" if column != task_field else "")
        return UserError(problem, file=self.file, where=where, fix=fix)


def parse_source(doc: YamlDocument, value: Any) -> TaskSource:
    """The `tasks:` value as a source reference (a string, or a mapping with `source:`)."""
    at: KeyPath = ("tasks",)
    if isinstance(value, str):
        value = {"source": value}
    for key in value:
        if key not in SOURCE_KEYS:
            raise doc.error((*at, key), f"unknown key {key!r} in a task source.",
                            f"use one of: {', '.join(sorted(SOURCE_KEYS))}.")
    source = value.get("source")
    if not isinstance(source, str) or not source.strip():
        raise doc.error(at, "a task source needs `source:` (a file, a dataset folder or hf://org/name).")
    spec = TaskSource(source=source.strip())
    fields = value.get("fields") or {}
    if not isinstance(fields, Mapping):
        raise doc.error((*at, "fields"), "`fields` must map task fields to column names, e.g. {prompt: question}.")
    for task_field, column in fields.items():
        if task_field not in DEFAULT_FIELDS:
            raise doc.error((*at, "fields", task_field), f"unknown task field {task_field!r}.",
                            f"map some of: {', '.join(DEFAULT_FIELDS)}.")
        is_list = isinstance(column, list) and all(isinstance(c, str) for c in column)
        if not (isinstance(column, str) or (task_field == "metadata" and is_list)):
            raise doc.error((*at, "fields", task_field), f"`{task_field}` must name one column"
                            + (" (or, for metadata, a list of columns)." if task_field == "metadata" else "."))
        spec.fields[task_field] = list(column) if is_list else str(column)
    spec.explicit = frozenset(fields)
    for key in ("limit", "sample", "seed"):
        number = value.get(key)
        if number is not None and (not isinstance(number, int) or isinstance(number, bool)
                                   or number < (0 if key == "seed" else 1)):
            raise doc.error((*at, key), f"`{key}` must be a whole number" + (" >= 0." if key == "seed" else " >= 1."))
    spec.limit, spec.sample, spec.seed = value.get("limit"), value.get("sample"), value.get("seed") or 0
    if not isinstance(value.get("shuffle", False), bool):
        raise doc.error((*at, "shuffle"), "`shuffle` must be true or false.")
    spec.shuffle = bool(value.get("shuffle", False))
    query = parse_qs(urlsplit(spec.source).query) if spec.source.startswith(HF_SCHEME) else {}
    for key in ("split", "revision", "config"):
        given, in_url = value.get(key), (query[key][-1] if key in query else None)
        if given is not None and not isinstance(given, str):
            raise doc.error((*at, key), f"`{key}` must be text.")
        if given is not None and in_url is not None and given != in_url:
            raise doc.error((*at, key), f"`{key}: {given}` disagrees with `{key}={in_url}` in the hf:// reference.",
                            "give it once.")
        setattr(spec, key, given if given is not None else in_url)
    unknown = sorted(set(query) - {"split", "revision", "config"})
    if unknown:
        raise doc.error((*at, "source"), f"unknown parameter(s) {unknown} in the hf:// reference.",
                        "use split, revision and config.")
    return spec


def load_rows(doc: YamlDocument, spec: TaskSource) -> tuple[str, list[Row], str]:
    """(the source as named in messages, its selected rows, a fingerprint of its content): read,
    sampled, shuffled and limited. The fingerprint goes into the spec digest (see `Suite.source_hashes`)."""
    if spec.source.startswith(HF_SCHEME):
        _datasets_or_error(doc, spec)  # before a download it could not read
        snapshot = _hub_snapshot_or_error(doc, spec)
        name, rows = spec.source, _dataset_rows(doc, spec, snapshot, hub=True)
        fingerprint = f"hf-commit:{snapshot.name}"  # the snapshot folder is named by its commit
    else:
        path = doc.path.parent / spec.source
        name = str(path)
        if path.is_dir():
            rows = _dataset_rows(doc, spec, path)
        elif not path.is_file():
            raise doc.error(("tasks",), f"task source {spec.source!r} not found (looked at {path}).",
                            "give a .jsonl or .csv file or a dataset folder, relative to the suite file, "
                            "or hf://org/name.")
        elif path.suffix.lower() in (".jsonl", ".ndjson", ".json", ".csv", ".tsv"):
            rows = _file_rows(path)
        else:
            raise doc.error(("tasks",), f"task source {spec.source!r}: unknown file type {path.suffix!r}.",
                            "use a .jsonl, .json or .csv file, a dataset folder, or hf://org/name.")
        fingerprint = _hash_path(path)
    if not rows:
        raise doc.error(("tasks",), f"task source {spec.source!r} has no rows.")
    return name, select_rows(rows, spec), fingerprint


def _hash_path(path: Path) -> str:
    """sha256 of a file, or of every file under a folder (names and bytes, in name order)."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        digest.update(str(file.relative_to(path) if file != path else file.name).encode())
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def select_rows(rows: list[Row], spec: TaskSource) -> list[Row]:
    """`sample` (seeded, source order kept), then `shuffle` (seeded), then `limit`."""
    rng = random.Random(spec.seed)
    if spec.sample is not None and spec.sample < len(rows):
        picked = sorted(rng.sample(range(len(rows)), spec.sample))
        rows = [rows[i] for i in picked]
    if spec.shuffle:
        rows = list(rows)
        rng.shuffle(rows)
    return rows[: spec.limit] if spec.limit is not None else rows


def _file_rows(path: Path) -> list[Row]:
    """Every row of a JSONL or CSV file; unreadable text is a UserError naming the file."""
    suffix = path.suffix.lower()
    read = _json_rows if suffix == ".json" else _jsonl_rows if suffix in (".jsonl", ".ndjson") else _csv_rows
    try:
        return list(read(path))
    except UnicodeDecodeError as exc:
        raise UserError(f"not UTF-8 text (byte {exc.start} cannot be decoded).", file=path,
                        fix="save the file as UTF-8.") from None
    except OSError as exc:
        raise UserError(f"cannot be read: {exc.strerror or exc}.", file=path) from None


def _jsonl_rows(path: Path) -> Iterator[Row]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"line {number}"
            try:
                values = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UserError(f"not valid JSON: {exc.msg} (column {exc.colno}).", file=path, where=where,
                                fix="write one JSON object per line.") from None
            if not isinstance(values, dict):
                raise UserError(f"each line must be a JSON object, not {type(values).__name__}.", file=path,
                                where=where, fix='write {"id": ..., "prompt": ...} on each line.')
            yield Row(where, values)


def _json_rows(path: Path) -> Iterator[Row]:
    """A `.json` file holding either one JSON array of objects or JSON Lines (BFCL ships JSON Lines
    under a .json suffix): an array when the first non-blank character is `[`, else one object a line."""
    text = path.read_text(encoding="utf-8")
    if not text.lstrip().startswith("["):
        yield from _jsonl_rows(path)
        return
    try:
        values = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).", file=path,
                        where=f"line {exc.lineno}",
                        fix="write one JSON array of objects, or one object a line.") from None
    for index, item in enumerate(values, 1):
        if not isinstance(item, dict):
            raise UserError(f"item {index} of the array must be a JSON object, not {type(item).__name__}.",
                            file=path, fix='write [{"id": ..., "prompt": ...}, ...].')
        yield Row(f"item {index}", item)


def _csv_rows(path: Path) -> Iterator[Row]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
        try:
            yield from _csv_records(path, reader)
        except csv.Error as exc:
            raise UserError(f"not valid CSV: {exc}.", file=path, where=f"line {reader.line_num + 1}",
                            fix="check the quoting (a cell may hold at most 128 KiB).") from None


def _csv_records(path: Path, reader: csv.DictReader[str]) -> Iterator[Row]:
    header = reader.fieldnames or []
    for values in reader:
        where = f"line {reader.line_num}"
        if None in values:
            raise UserError(f"more cells than the {len(header)} columns of the header.", file=path,
                            where=where, fix="quote cells that contain the delimiter.")
        yield Row(where, {k: v for k, v in values.items() if v is not None})


def _datasets_or_error(doc: YamlDocument, spec: TaskSource) -> Any:
    try:
        import datasets
    except ImportError:
        raise doc.error(("tasks",), f"task source {spec.source!r} needs the `datasets` library.",
                        HF_EXTRA_HINT + ".") from None
    return datasets


def _dataset_rows(doc: YamlDocument, spec: TaskSource, folder: Path, *, hub: bool = False) -> list[Row]:
    datasets = _datasets_or_error(doc, spec)
    what = spec.source
    try:
        saved = any((folder / n).is_file() for n in ("dataset_info.json", "dataset_dict.json"))
        if saved and not hub:
            loaded: Any = datasets.load_from_disk(str(folder))
        else:
            loaded = datasets.load_dataset(str(folder), spec.config, split=spec.split)
    except Exception as exc:  # the library's errors are many (missing split, bad files)
        raise doc.error(("tasks",), f"could not load task source {what!r}: {type(exc).__name__}: {exc}.",
                        "check the split and the files.") from None
    if isinstance(loaded, datasets.DatasetDict):
        splits = sorted(loaded)
        chosen = spec.split or (splits[0] if len(splits) == 1 else None)
        if chosen not in loaded:
            raise doc.error(("tasks",), f"task source {what!r} has splits {splits}; "
                            + (f"not {spec.split!r}." if spec.split else "which one?"),
                            "name one with `split:` (or ?split= in an hf:// reference).")
        loaded = loaded[chosen]
    return [Row(f"row {index + 1}", values) for index, values in enumerate(loaded)]


def _hub_snapshot_or_error(doc: YamlDocument, spec: TaskSource) -> Path:
    try:
        import huggingface_hub  # noqa: F401  (comes with the [hf] extra, and with litellm)
    except ImportError:
        raise doc.error(("tasks",), f"task source {spec.source!r} needs the `huggingface_hub` library.",
                        HF_EXTRA_HINT + ".") from None
    try:
        return _hub_snapshot(spec)
    except Exception as exc:  # network, an unknown repository or revision, nothing in the cache
        raise doc.error(("tasks",), f"could not load task source {spec.source!r}: {type(exc).__name__}: {exc} "
                        "(offline, a dataset loads from the cache only after a first download).",
                        "check the name and revision; set HF_HUB_OFFLINE=1 to use the cached copy.") from None


def _hub_snapshot(spec: TaskSource) -> Path:
    """The dataset repository's files at `revision`, through the Hugging Face cache: downloaded once, then
    read from the cache (with HF_HUB_OFFLINE=1, or when the Hub cannot be reached)."""
    import huggingface_hub

    parts = urlsplit(spec.source)
    repo = (parts.netloc + parts.path).strip("/")
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    try:
        return Path(huggingface_hub.snapshot_download(repo, repo_type="dataset", revision=spec.revision,
                                                      local_files_only=offline))
    except Exception:
        if offline:
            raise
    return Path(huggingface_hub.snapshot_download(repo, repo_type="dataset", revision=spec.revision,
                                                  local_files_only=True))


_PATH_STEP = re.compile(r"\.?([^.\[\]]+)|\[(\d+)\]")
_MISSING = object()


def parse_field_path(path: str) -> list[str | int] | None:
    """`question[0][0].content` as ["question", 0, 0, "content"]; None when it is not a path."""
    steps: list[str | int] = []
    position = 0
    while position < len(path):
        match = _PATH_STEP.match(path, position)
        if match is None or (position == 0 and match.group(0).startswith(".")):
            return None
        steps.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
        position = match.end()
    return steps or None


def field_value(values: Mapping[str, Any], column: str) -> Any:
    """The value at `column` in a row: a column name, or a path into nested values (`a[0].b`);
    `_MISSING` when the row has nothing there. A column whose name is the whole path wins."""
    if column in values:
        return values[column]
    steps = parse_field_path(column)
    if steps is None or len(steps) == 1:
        return _MISSING
    value: Any = values
    for step in steps:
        in_list = isinstance(step, int) and isinstance(value, list) and step < len(value)
        in_mapping = isinstance(step, str) and isinstance(value, Mapping) and step in value
        if not (in_list or in_mapping):
            return _MISSING
        value = value[step]
    return value


def row_entry(row: Row, spec: TaskSource, site: RowSite, number: int) -> dict[str, Any]:
    """The inline-task mapping a row stands for (its cells converted where a CSV holds text)."""
    entry: dict[str, Any] = {}
    for task_field, column in spec.fields.items():
        if isinstance(column, list):  # metadata from several columns
            missing = [c for c in column if field_value(row.values, c) is _MISSING]
            if missing:
                raise site.error((task_field,), f"no column(s) {missing} for `metadata`.",
                                 f"the row has: {', '.join(map(str, row.values))}.")
            entry[task_field] = {c: field_value(row.values, c) for c in column}
            continue
        value = field_value(row.values, column)
        if value is _MISSING or value is None or (isinstance(value, str) and value == ""):
            required = task_field == "prompt" or (task_field in spec.explicit and task_field not in OPTIONAL_FIELDS)
            if required:
                raise site.error((task_field,), f"the row has no value in column {column!r}.",
                                 f"fill it, or map `{task_field}` to another column (or a path such as "
                                 f"`question[0][0].content`) in `fields:`.")
            continue
        entry[task_field] = _cell(site, task_field, value)
    if "id" not in entry and "id" not in spec.explicit:
        entry["id"] = str(number)  # no id column: the row's position in the source
    return entry


def _cell(site: RowSite, task_field: str, value: Any) -> Any:
    """Text cells (CSV) holding a list, a mapping or a flag become that; other values pass through."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if task_field in ("metadata", "scoring"):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise site.error((task_field,), f"`{task_field}` must be a JSON object, not {text[:40]!r}.",
                             'write it as {"key": "value"}.') from None
    if task_field in ("tools", "depends_on", "correct_tools"):
        if text.startswith("["):
            try:
                return json.loads(text)
            except json.JSONDecodeError:
                raise site.error((task_field,), f"`{task_field}` is not a valid JSON list.") from None
        return [part.strip() for part in text.replace(";", ",").split(",") if part.strip()]
    if task_field == "solvable":
        flag = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}.get(text.lower())
        if flag is None:
            raise site.error((task_field,), f"`solvable` must be true or false, not {text!r}.")
        return flag
    return value

"""The one finished-trial record: emitted in TRIAL_FINISHED, stored, read back, measured and shown.

`TrialResult` is what a trial came to. The runner builds one and emits its `finished_data()`; the
store reads its rows back as TrialResults; the metrics read nothing else. Its `success(threshold)`
is the success rule (`passes` is the same rule for readers that hold the values, not a record).
Who counts as having assisted a trial is `corral_core.events.marks_assisted`, the one assisted rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, cast

from corral_core.domain import TrialStatus
from corral_core.events import TrialFinishedData


def passes(status: str, score: float | None, error: str | None, surrendered: bool, threshold: float = 0.0) -> bool:
    """The success rule: completed, a score above `threshold`, no error (an empty one is none), no surrender.

    The default threshold 0 keeps Corral's rule (any positive partial score passes)."""
    return status == TrialStatus.COMPLETED and score is not None and score > threshold and not error and not surrendered


@dataclass(frozen=True)
class FieldRole:
    """Where one TrialResult field goes, declared beside it (`role(...)` in its `field(metadata=...)`):

    - `column`: the `trial` table's column that stores it (None: not stored; the reader is handed the value);
    - `finished`: TRIAL_FINISHED carries it (events.TrialFinishedData);
    - `measured`: the metrics' reader reads it back from the store (`RECORD_COLUMNS`; else it gets its default);
    - `none_is_default`: a stored None (a counter, a flag, a list) reads as the field's default;
    - `exported`: a stored field is a column of the CSV export (report.csv_columns; the JSON export has every
      stored field). tests/core/test_trial_declaration.py names each place a declared field does not reach."""

    column: str | None
    finished: bool = True
    measured: bool = True
    none_is_default: bool = False
    exported: bool = True


ROLE = "trial"  # the metadata key of a field's FieldRole


def role(column: str | None = "", *, finished: bool = True, measured: bool = True, none_is_default: bool = False,
         exported: bool = True) -> dict[str, FieldRole]:
    """A field's metadata: its FieldRole (`column=""`: stored under the field's own name)."""
    return {ROLE: FieldRole(column, finished, measured, none_is_default, exported)}


@dataclass(frozen=True)
class TrialResult:
    """One finished (or skipped) trial, as plain data.

    `tool_calls` holds ToolCall dicts (`tool_name`, `status`, `duration`, ...). `solvable` is the task's
    declared solvability (None when the task does not say). `chain_position` is the link's index in its
    chain. Each field declares where it goes (`FieldRole`, default: stored under its name, in TRIAL_FINISHED,
    read back by the metrics); the store's columns read back, the record builders and TRIAL_FINISHED's payload are
    derived from these declarations (`record_columns`, `record_builder`, `finished_data`).
    """

    task_id: str = field(metadata=role(finished=False))  # the event's own id
    arm: str = ""
    trial_index: int = 0
    status: str = TrialStatus.COMPLETED
    score: float | None = None
    surrendered: bool = field(default=False, metadata=role(none_is_default=True))
    error: str | None = None
    fault: str | None = None  # one of metrics.FAULTS when the trial errored or timed out
    assisted: bool = field(default=False, metadata=role(none_is_default=True))  # events.marks_assisted
    solvable: bool | None = field(default=None, metadata=role(None, finished=False, measured=False))  # a task fact
    prompt_tokens: int = field(default=0, metadata=role(none_is_default=True))
    completion_tokens: int = field(default=0, metadata=role(none_is_default=True))
    total_tokens: int = field(default=0, metadata=role(none_is_default=True))
    cost: float | None = None
    duration: float | None = None
    # each its own TOOL_CALL event and tool_call row
    tool_calls: list[dict[str, Any]] = field(default_factory=list, metadata=role(None, finished=False, measured=False,
                                                                                none_is_default=True))
    episode_id: str | None = None
    chain_position: int | None = field(default=None, metadata=role(None, finished=False, measured=False))  # task fact
    trial_id: str | None = field(default=None, metadata=role("id", finished=False))  # the event's own id
    answer: str | None = field(default=None, metadata=role(measured=False))
    explanation: str | None = field(default=None, metadata=role(measured=False))
    iterations: int = field(default=0, metadata=role(none_is_default=True))
    tool_duration: float | None = None
    # transient provider failures retried (429, timeout, 5xx)
    llm_retries: int = field(default=0, metadata=role(measured=False, none_is_default=True))
    # seconds waited before those retries
    llm_retry_wait: float = field(default=0.0, metadata=role(measured=False, none_is_default=True))
    # seconds waited for the model's requests/tokens-per-minute budget
    rate_limit_wait: float = field(default=0.0, metadata=role(measured=False, none_is_default=True))

    def success(self, threshold: float = 0.0) -> bool:
        """The trial succeeded (`passes`)."""
        return passes(self.status, self.score, self.error, self.surrendered, threshold)

    def finished_data(self) -> TrialFinishedData:
        """The TRIAL_FINISHED payload: FINISHED_KEYS, in that order (the wire and the store read it)."""
        values = self.__dict__
        return cast(TrialFinishedData, {key: values[key] for key in FINISHED_KEYS})

    def evolve(self, **changes: Any) -> TrialResult:
        """A copy with `changes` (field -> value), without __init__ (cheap: a reader may rename a million)."""
        unknown = changes.keys() - _names(type(self))
        if unknown:
            raise TypeError(f"TrialResult has no field {', '.join(sorted(unknown))}")
        record = self.__class__.__new__(self.__class__)
        record.__dict__.update(self.__dict__, **changes)
        return record

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> TrialResult:
        """A record of a dict (a store row, TRIAL_FINISHED data), ignoring unknown keys.

        None for a counter (tokens, retries), a flag or a list (tool_calls) becomes the field's default.
        """
        names = _names(cls)
        kwargs = {key: value for key, value in data.items() if key in names}
        for defaulted in _none_is_default(cls):
            if defaulted in kwargs and kwargs[defaulted] is None:
                del kwargs[defaulted]
        return cls(**kwargs)

    @classmethod
    def from_values(cls, values: Sequence[Any]) -> TrialResult:
        """A record of every field's value in declaration order (FIELD_NAMES), without __init__: the fast path
        of a reader that builds a million of them (a frozen __init__ sets each field through
        object.__setattr__, several times slower)."""
        record = cls.__new__(cls)
        record.__dict__.update(zip(_NAMES.get(cls) or _names(cls), values, strict=True))
        return record


_NAMES: dict[type, tuple[str, ...]] = {}


def _names(record: type) -> tuple[str, ...]:
    """The fields of TrialResult or of a subclass declaring more, in declaration order (cached: read per record)."""
    names = _NAMES.get(record)
    if names is None:
        names = _NAMES[record] = tuple(f.name for f in fields(record))
    return names


_ROLES: dict[type, dict[str, FieldRole]] = {}


def field_roles(record: type = TrialResult) -> dict[str, FieldRole]:
    """Each field's declared role, by name in declaration order (undeclared: stored under its name, everywhere)."""
    roles = _ROLES.get(record)
    if roles is None:
        roles = _ROLES[record] = {}
        for f in fields(record):
            declared = f.metadata.get(ROLE) or FieldRole("")
            roles[f.name] = FieldRole(declared.column or (None if declared.column is None else f.name),
                                      declared.finished, declared.measured, declared.none_is_default,
                                      declared.exported)
    return dict(roles)


def _none_is_default(record: type) -> tuple[str, ...]:
    return tuple(name for name, r in field_roles(record).items() if r.none_is_default)


def record_fields(record: type = TrialResult) -> tuple[str, ...]:
    """The fields the metrics' reader reads back from the store, in `record_columns` order: the stored id first
    (the store's reader keys a page's tool calls by it), then the others in declaration order."""
    roles = field_roles(record)
    measured = [name for name, r in roles.items() if r.measured and r.column is not None]
    ids = [name for name in measured if roles[name].column == "id"]
    return (*ids, *(name for name in measured if name not in ids))


def record_columns(record: type = TrialResult) -> tuple[str, ...]:
    """The `trial` table's columns of `record_fields`, in that order: what the store selects for the metrics."""
    roles = field_roles(record)
    return tuple(str(roles[name].column) for name in record_fields(record))


def exported_columns(record: type = TrialResult) -> tuple[str, ...]:
    """The export's column of each stored, exported field, in declaration order (the stored `id` is `trial_id`)."""
    return tuple("trial_id" if r.column == "id" else r.column for r in field_roles(record).values()
                 if r.column is not None and r.exported)


def _default(f: Field[Any], namespace: dict[str, Any]) -> str:
    """The expression of `f`'s default in a generated builder (a fresh value from a factory: a new list each)."""
    name = f"default_{f.name}"
    if f.default_factory is not MISSING:
        namespace[name] = f.default_factory
        return f"{name}()"
    if f.default is MISSING:
        raise TypeError(f"{f.name} has no default, so a reader must be given it: declare it stored and measured")
    namespace[name] = f.default
    return name


def record_builder(record: type = TrialResult) -> Callable[..., Any]:
    """`build(values, **given)`: the record of a row of `record_columns(record)` values in order (as a driver gives
    them: booleans may be 0/1, counters None), its unstored fields (`column=None`: solvable, chain_position,
    tool_calls) from `given` and the other unread ones at their defaults.

    The function is written from the declaration (as dataclasses writes __init__) and fills the record's __dict__
    without __init__ (as `from_values`): a reader builds a million records at the end of a big run."""
    roles = field_roles(record)
    columns = {name: i for i, name in enumerate(record_fields(record))}
    given = [f.name for f in fields(record) if roles[f.name].column is None]
    namespace: dict[str, Any] = {"new": record.__new__, "record": record, "set_dict": object.__setattr__}
    parts = []
    for f in fields(record):
        r = roles[f.name]
        if f.name in columns or f.name in given:
            value = f"v{columns[f.name]}" if f.name in columns else f.name
            if f.type in ("bool", bool):
                value = f"bool({value})"
            elif r.none_is_default:
                value = f"({value} if {value} is not None else {_default(f, namespace)})"
        else:
            value = _default(f, namespace)
        parts.append(f"{f.name!r}: {value}")
    unpack = "".join(f"v{i}, " for i in range(len(columns)))
    keywords = "".join(f", {name}=None" for name in given)
    # the source is ours, written from the field names above (nothing a user wrote)
    source = (f"def build(values{keywords}):\n    ({unpack}) = values\n"
              f"    built = new(record)\n    set_dict(built, '__dict__', {{{', '.join(parts)}}})\n    return built\n")
    exec(compile(source, f"<record_builder of {record.__name__}>", "exec"), namespace)
    build: Callable[..., Any] = namespace["build"]
    build.__doc__ = source
    return build


FIELD_NAMES = _names(TrialResult)
# Every field but these is in the TRIAL_FINISHED payload: the event's own ids, the task's facts a reader
# adds (runner.results.TaskFacts) and the tool calls (each its own TOOL_CALL event and tool_call row).
NOT_FINISHED = tuple(name for name, r in field_roles().items() if not r.finished)
# The TRIAL_FINISHED payload's keys, in wire order (events.TrialFinishedData's): the outcome, then (for
# progress readers) where it ran. tests/core/test_trial_shapes.py ties them to the declaration.
FINISHED_KEYS = tuple(TrialFinishedData.__annotations__)
RECORD_FIELDS = record_fields()
RECORD_COLUMNS = record_columns()
build_record = record_builder()

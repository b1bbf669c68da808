"""Every shape of a finished trial is TrialResult's: the TRIAL_FINISHED payload, the stored trial (TrialInfo),
the `trial` table, what the store writes of the two trial events, the report rows and the CSV columns. A field
added to one and not the others fails here, naming it; the export's columns keep their order (its bytes)."""

from __future__ import annotations

import dataclasses
import typing

from corral_core.events import EventKind, TrialFinishedData, TrialStartedData, event_from
from corral_core.report import CSV_COLUMNS, CSV_LEAVES_OUT
from corral_core.runner.results import ROW_KEYS
from corral_core.store.convert import TRIAL_COLUMNS, TRIAL_RECORD_COLUMNS
from corral_core.store.event_rows import trial_finished_values, trial_started_values
from corral_core.store.models import TRIAL_EVENT_FIELDS, TrialInfo
from corral_core.store.tables import TrialRow
from corral_core.trial_result import FIELD_NAMES, FINISHED_KEYS, NOT_FINISHED, TrialResult

RESULT_TYPES = typing.get_type_hints(TrialResult)
INFO_FIELDS = tuple(f.name for f in dataclasses.fields(TrialInfo))
STARTED_KEYS = tuple(typing.get_type_hints(TrialStartedData))
SET_WHEN_STARTED = ("arm", "trial_index", "episode_id")  # TRIAL_FINISHED repeats them for progress readers


def test_the_finished_payload_is_every_field_of_the_record_but_the_named_ones_with_their_types() -> None:
    assert tuple(typing.get_type_hints(TrialFinishedData)) == FINISHED_KEYS
    assert set(NOT_FINISHED) <= set(FIELD_NAMES)
    missing = set(FIELD_NAMES) - set(NOT_FINISHED) - set(FINISHED_KEYS)
    extra = set(FINISHED_KEYS) - set(FIELD_NAMES)
    assert not missing and not extra, f"TRIAL_FINISHED lacks {sorted(missing)}, has unknown {sorted(extra)}"
    payload_types = typing.get_type_hints(TrialFinishedData)
    assert {k: payload_types[k] for k in FINISHED_KEYS} == {k: RESULT_TYPES[k] for k in FINISHED_KEYS}


def test_the_stored_trial_is_its_two_events_merged_with_the_records_types() -> None:
    expected = set(TRIAL_EVENT_FIELDS) | set(STARTED_KEYS) | set(FINISHED_KEYS)
    assert set(INFO_FIELDS) == expected, (f"TrialInfo lacks {sorted(expected - set(INFO_FIELDS))}, "
                                          f"has {sorted(set(INFO_FIELDS) - expected)} from no event")
    info_types = typing.get_type_hints(TrialInfo)
    shared = set(INFO_FIELDS) & set(FIELD_NAMES)
    assert {k: info_types[k] for k in shared} == {k: RESULT_TYPES[k] for k in shared}
    assert info_types["id"] is str and RESULT_TYPES["trial_id"] == str | None  # stored, a trial has its id


def test_the_trial_table_has_a_column_of_the_same_type_for_each_stored_field() -> None:
    columns = {column.name for column in TrialRow.__table__.columns}  # type: ignore[attr-defined]
    assert columns == set(INFO_FIELDS), (f"the trial table lacks {sorted(set(INFO_FIELDS) - columns)}, "
                                         f"TrialInfo lacks {sorted(columns - set(INFO_FIELDS))}")
    row_types, info_types = typing.get_type_hints(TrialRow), typing.get_type_hints(TrialInfo)
    assert {k: row_types[k] for k in INFO_FIELDS} == {k: info_types[k] for k in INFO_FIELDS}
    assert TRIAL_COLUMNS == INFO_FIELDS and set(TRIAL_RECORD_COLUMNS) <= set(INFO_FIELDS)


def test_the_store_writes_every_field_of_both_trial_events() -> None:
    started = event_from(EventKind.TRIAL_STARTED, trial_id="tr_1", task_id="t1", benchmark_id="bm_1",
                    data=dict.fromkeys(STARTED_KEYS))
    assert set(trial_started_values(started)) == set(INFO_FIELDS)  # the row as it starts: every column
    finished = event_from(EventKind.TRIAL_FINISHED, trial_id="tr_1", task_id="t1", data=dict.fromkeys(FINISHED_KEYS))
    written = set(trial_finished_values(finished))
    # `assisted` is OR-ed in by the writer (a person may have touched the trial before it finished)
    assert written == set(FINISHED_KEYS) - set(SET_WHEN_STARTED) - {"assisted"} | {"finished_at"}


def test_the_exports_columns_are_the_stored_fields_in_their_order() -> None:
    assert (*INFO_FIELDS[1:], "trial_id", "success") == ROW_KEYS
    assert set(CSV_LEAVES_OUT) <= set(ROW_KEYS)
    assert set(CSV_COLUMNS) == set(ROW_KEYS) - set(CSV_LEAVES_OUT), (
        f"CSV_COLUMNS lacks {sorted(set(ROW_KEYS) - set(CSV_LEAVES_OUT) - set(CSV_COLUMNS))}")
    # the exported files' columns, byte for byte: a reader of earlier exports finds each where it was
    assert ",".join(CSV_COLUMNS) == (
        "trial_id,benchmark_id,arm,task_id,trial_index,episode_id,agent,model,verbosity,status,score,success,answer,"
        "explanation,surrendered,error,fault,prompt_tokens,completion_tokens,total_tokens,cost,duration,tool_duration,"
        "iterations,assisted,started_at,finished_at,llm_retries,llm_retry_wait,rate_limit_wait")
    assert ",".join(ROW_KEYS) == (
        "benchmark_id,arm,task_id,trial_index,episode_id,agent,model,verbosity,status,score,answer,explanation,"
        "surrendered,error,prompt_tokens,completion_tokens,total_tokens,cost,duration,tool_duration,iterations,"
        "assisted,started_at,finished_at,fault,parent_trial_id,fork_iteration,llm_retries,llm_retry_wait,"
        "rate_limit_wait,trial_id,success")

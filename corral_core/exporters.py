"""`corral-tui export --format NAME`: the formats a recorded benchmark is written in, one registry.

Each format is an `Exporter` registered on EXPORTERS (json, csv, inspect here; others from plugins'
`corral_tui.exporters` entry points): `write(job)` writes the benchmark and answers the paths it
wrote that the command prints (none for one file or stdout). `folder` names the default folder of a
format that writes several files; `options` lists the export flags it takes besides --output.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from corral_core import report
from corral_core.registry import Registry

if TYPE_CHECKING:
    from corral_core.store import Repository
    from corral_core.store.models import BenchmarkInfo


@dataclass(frozen=True)
class ExportJob:
    """One export: the benchmark, where to write it (a file, `-` for stdout, or a folder), the flags."""

    repository: Repository
    info: BenchmarkInfo
    output: str
    with_transcripts: bool = False
    raw_csv: bool = False  # CSV: text cells as they are (no leading ' before =, +, -, @, tab, CR)

    @property
    def pass_threshold(self) -> float:
        return float(((self.info.metrics or {}).get("spec") or {}).get("pass_threshold") or 0.0)


class Exporter:
    """One export format: subclass it, register it on EXPORTERS, write in `write`."""

    folder: str | None = None  # writes several files into a folder (this one by default), not one file
    files = "its files"  # what goes into that folder, for messages

    def write(self, job: ExportJob) -> list[str]:
        raise NotImplementedError


EXPORTERS: Registry[type[Exporter]] = Registry("exporters", "export format", title="Exporters",
                                               where="`corral-tui export BENCHMARK_ID --format NAME`")


@EXPORTERS.kind("json", doc="the benchmark's metrics, spec and trials as one JSON document (default)",
                options={"with_transcripts": "--with-transcripts: each trial also carries its messages and tool calls"})
class JsonExporter(Exporter):
    def write(self, job: ExportJob) -> list[str]:
        from corral_core.runner.results import ROW_KEYS, stored_trial_values

        info = job.info
        rows = stored_trial_values(job.repository, info.id, job.pass_threshold, ROW_KEYS, iso_times=True)
        document = dict(info.metrics or {})
        document.update(benchmark_id=info.id, name=info.spec_name, status=info.status,
                        spec_digest=info.spec_digest, headline_score=info.headline_score,
                        attempt_status=info.attempt_status, created_at=info.created_at.isoformat(),
                        finished_at=info.finished_at.isoformat() if info.finished_at else None,
                        spec_yaml=info.spec_yaml,
                        trials=report.JsonStream(_with_transcripts(job.repository, rows)) if job.with_transcripts
                        else report.JsonStream(rows, keys=ROW_KEYS))
        if not (info.metrics or {}).get("arms"):
            document["note"] = "the benchmark never finished, so it has no metrics; resume it to compute them."
        report.write_json(job.output, document)
        return []


@EXPORTERS.kind("csv", doc="the trials, one row each (report.CSV_COLUMNS), streamed a page at a time")
class CsvExporter(Exporter):
    def write(self, job: ExportJob) -> list[str]:
        from corral_core.runner.results import stored_trial_values

        report.write_csv_values(job.output, stored_trial_values(job.repository, job.info.id, job.pass_threshold,
                                                                report.CSV_COLUMNS, iso_times=True),
                                raw=job.raw_csv)
        return []


@EXPORTERS.kind("inspect", doc="one Inspect AI log per arm, in a folder (needs the [inspect] extra)")
class InspectExporter(Exporter):
    folder = "inspect-logs"
    files = "Inspect logs"

    def write(self, job: ExportJob) -> list[str]:
        from corral_core.interop.inspect_out import write_inspect_logs

        return [str(path) for path in write_inspect_logs(job.repository, job.info, Path(job.output))]


def _with_transcripts(repository: Repository, rows: Any, page: int = 500) -> Iterator[dict[str, Any]]:
    """The export's trial rows as dicts, each with its messages and tool calls (read a page of trials at a time)."""
    from itertools import islice

    from corral_core.runner.results import ROW_KEYS

    trial_at = ROW_KEYS.index("trial_id")
    rows = iter(rows)
    while chunk := list(islice(rows, page)):
        transcripts = repository.transcripts([values[trial_at] for values in chunk])
        for values in chunk:
            yield {**dict(zip(ROW_KEYS, values, strict=True)), **transcripts[values[trial_at]]}

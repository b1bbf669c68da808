"""`corral-tui samples [--copy DIR]`: where the packaged sample suites and specs are, or a copy to edit.

After `pip install corral-tui` the samples live inside the installed package (corral_core/samples.py):
fine to run, not a place to edit. `--copy DIR` writes DIR/sample_tasks and DIR/environments, laid
out as in the repository, so the copied specs run as they are (`corral-tui --batch DIR/sample_tasks/...`).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from corral_core.errors import UserError
from corral_core.samples import environments_dir, sample_specs, sample_tasks_dir

COPIED = ("sample_tasks", "environments")


def build_samples_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="corral-tui samples",
                                     description="Show the sample suites and benchmark specs that ship with "
                                                 "corral-tui, or copy them to a folder to edit.")
    parser.add_argument("--copy", metavar="DIR", help="copy sample_tasks/ and environments/ into DIR (new or empty)")
    return parser


def samples_main(argv: list[str]) -> int:
    args = build_samples_parser().parse_args(argv)
    if args.copy:
        return _copy(Path(args.copy).expanduser())
    print(f"sample suites, specs and scripts: {sample_tasks_dir()}")
    print(f"environment modules: {environments_dir()}")
    print("benchmark specs (run one with `corral-tui --batch PATH`):")
    for spec in sample_specs():
        print(f"  {spec}")
    return 0


def _copy(target: Path) -> int:
    taken = [name for name in COPIED if (target / name).exists()]
    if taken:
        raise UserError(f"{target} already has {' and '.join(f'{name}/' for name in taken)}.", where="--copy",
                        fix="name a new or empty folder; nothing was copied.")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name, source in zip(COPIED, (sample_tasks_dir(), environments_dir()), strict=True):
        shutil.copytree(source, target / name, ignore=ignore)
    quickstart = target / "sample_tasks" / "quickstart.bench.yaml"
    print(f"copied the samples to {target}; try: corral-tui --batch {quickstart}")
    return 0

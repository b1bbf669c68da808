"""`corral-tui samples [--path NAME | --copy DIR]`: where the packaged sample suites and specs are, or a copy
to edit.

After `pip install corral-tui` the samples live inside the installed package (corral_core/samples.py):
fine to run, not a place to edit. `--copy DIR` writes DIR/sample_tasks and DIR/environments, laid
out as in the repository, so the copied specs run as they are (`corral-tui --batch DIR/sample_tasks/...`).
The listing prints each spec's path alone on its line and `--path NAME` prints one path, so either works
inside `$(...)`: `corral-tui --batch "$(corral-tui samples --path quickstart)"`.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from corral_core.errors import UserError
from corral_core.samples import SCRIPT_SUFFIX, SPEC_SUFFIX, environments_dir, sample_specs, sample_tasks_dir

COPIED = ("sample_tasks", "environments")


def build_samples_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="corral-tui samples",
                                     description="Show the sample suites and benchmark specs that ship with "
                                                 "corral-tui, or copy them to a folder to edit.")
    given = parser.add_mutually_exclusive_group()
    given.add_argument("--path", metavar="NAME", choices=_names(),
                       help="print only the path of the sample spec or suite NAME (quickstart, samplemath.yaml, ...), "
                            "for $(...)")
    given.add_argument("--copy", metavar="DIR", help="copy sample_tasks/ and environments/ into DIR (new or empty)")
    return parser


def _names() -> dict[str, Path]:
    """The samples `--path` knows: each spec by its name (`quickstart`) and file name, each suite by file name."""
    names: dict[str, Path] = {}
    for spec in sample_specs():
        names[spec.name.removesuffix(SPEC_SUFFIX)] = names[spec.name] = spec
    for suite in sorted(sample_tasks_dir().glob("*.yaml")):
        if not suite.name.endswith((SPEC_SUFFIX, SCRIPT_SUFFIX)):
            names.setdefault(suite.name, suite)
    return names


def samples_main(argv: list[str]) -> int:
    args = build_samples_parser().parse_args(argv)
    if args.copy:
        return _copy(Path(args.copy).expanduser())
    if args.path:
        print(_names()[args.path])
        return 0
    print(f"sample suites, specs and scripts: {sample_tasks_dir()}")
    print(f"environment modules: {environments_dir()}")
    print("benchmark specs (run one with `corral-tui --batch PATH`), one path a line:")
    for spec in sample_specs():
        print(spec)  # alone on its line: `$(corral-tui samples | grep -m1 quickstart.bench.yaml)` is the path
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

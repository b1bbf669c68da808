"""`corral-tui kinds`: every registered kind (built in and from plugins), and docs/kinds.md.

The registries live beside what they register (corral_core/registry.py says how); this module only
imports them all, so that the command, the docs page and completion see the same list.
"""

from __future__ import annotations

import argparse
import sys

from corral_core.registry import REGISTRIES, Registry

FAMILIES = ("scorers", "breakpoints", "tool_sources", "agents", "exporters")  # the order of docs/kinds.md
DOC_INTRO = """# Kinds: scorers, breakpoints, tool sources, agents, exporters

Generated from the registries by `corral-tui kinds --markdown --builtin` (tests/docs/test_kinds_doc.py
fails when this page and the code differ). `corral-tui kinds` lists what is installed, plugins
included. A package adds a kind by registering it with the family's decorator and naming it in the
family's entry point group; see [bring-your-own.md](bring-your-own.md#plugin-packages).
"""


def registries() -> dict[str, Registry]:  # type: ignore[type-arg]
    """Every family's registry, its modules imported (the order of docs/kinds.md)."""
    import corral_core.agents
    import corral_core.agents.breakpoints
    import corral_core.env.scoring
    import corral_core.exporters
    import corral_core.tools.factory  # noqa: F401  (each module registers its family)

    return {family: REGISTRIES[family] for family in sorted(REGISTRIES, key=_rank)}


def _rank(family: str) -> tuple[int, str]:
    return (FAMILIES.index(family) if family in FAMILIES else len(FAMILIES), family)


def kinds_markdown(*, builtin_only: bool = False) -> str:
    """docs/kinds.md: the intro and each family's section."""
    sections = [registry.markdown(builtin_only=builtin_only) for registry in registries().values()]
    return "\n".join([DOC_INTRO, *sections])


def kinds_main(argv: list[str]) -> int:
    """`corral-tui kinds [FAMILY] [KIND] [--markdown] [--builtin]`."""
    found = registries()
    names = sorted({name for registry in found.values() for name in registry.names()})
    parser = argparse.ArgumentParser(prog="corral-tui kinds",
                                     description="List the registered kinds (scorers, breakpoint kinds, tool "
                                                 "sources, agents, exporters), plugins' included, with their keys.")
    parser.add_argument("family", nargs="?", choices=list(found), help="only this family")
    parser.add_argument("kind", nargs="?", choices=names, metavar="KIND", help="only this kind")
    parser.add_argument("--markdown", action="store_true", help="as docs/kinds.md is written")
    parser.add_argument("--builtin", action="store_true", help="only corral-tui's own kinds, not plugins'")
    args = parser.parse_args(argv)
    if args.markdown:
        print(kinds_markdown(builtin_only=args.builtin) if args.family is None
              else found[args.family].markdown(builtin_only=args.builtin), end="")
        return 0
    for family, registry in found.items():
        if args.family not in (None, family):
            continue
        print(f"{registry.title} — entry point group {registry.group}")
        for kind in registry.kinds():
            if (args.builtin and kind.package) or args.kind not in (None, kind.name):
                continue
            source = f"  [{kind.package}]" if kind.package else ""
            print(f"  {kind.written:<16} {kind.doc}{source}")
            for key, text in kind.options.items():
                print(f"      {key}: {text}")
    sys.stdout.flush()
    return 0

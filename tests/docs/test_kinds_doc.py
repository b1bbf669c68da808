"""docs/kinds.md is what the registries say: regenerate it with
`corral-tui kinds --markdown --builtin > docs/kinds.md` after adding or changing a built-in kind."""

from __future__ import annotations

from pathlib import Path

from corral_core.kinds import kinds_markdown

PAGE = Path(__file__).resolve().parents[2] / "docs" / "kinds.md"


def test_the_kinds_page_is_generated_from_the_registries() -> None:
    assert PAGE.read_text(encoding="utf-8") == kinds_markdown(builtin_only=True), (
        "docs/kinds.md differs from the registries: run `corral-tui kinds --markdown --builtin > docs/kinds.md`")


def test_every_built_in_kind_has_its_doc_line_on_the_page() -> None:
    from corral_core.kinds import registries

    page = PAGE.read_text(encoding="utf-8")
    for registry in registries().values():
        for kind in registry.kinds():
            if kind.package is None:  # not a kind registered by another test or a plugin
                assert f"- `{kind.written}`: {kind.doc}" in page, kind.name

"""The documentation stands on its own: the README stays a landing page, every relative link in it,
in docs/ and in benchmarks/RESULTS.md reaches a file of the repository (and a heading, when it names
one), and no project file cites a document that is not in the repository."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", ROOT / "benchmarks" / "RESULTS.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {_slug(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6} ", line)}


def broken_links(document: Path) -> list[str]:
    broken = []
    for target in LINK.findall(FENCE.sub("", document.read_text())):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path_part, _, anchor = target.partition("#")
        path = (document.parent / path_part).resolve() if path_part else document
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target}: no heading #{anchor} in {path.name}")
    return broken


def test_every_relative_link_reaches_its_file_and_heading() -> None:
    broken = {str(d.relative_to(ROOT)): b for d in DOCUMENTS if (b := broken_links(d))}
    assert broken == {}


def test_a_broken_link_is_seen(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other\n\n## A heading\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](other.md#a-heading) [gone](missing.md) [bad](other.md#nothing) [web](https://x.org)\n")
    assert broken_links(page) == ["missing.md: no such file", "other.md#nothing: no heading #nothing in other.md"]


def test_the_readme_is_a_landing_page() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 400


def test_no_project_file_cites_a_document_outside_the_repository() -> None:
    files = [*DOCUMENTS, ROOT / "pyproject.toml", *ROOT.glob("corral_*/**/*.py"), *ROOT.glob("tests/**/*.py")]
    pattern = re.compile(r"DESIGN\.md|STYLE\.md|\.\./shared")
    here = Path(__file__).resolve()
    citing = sorted(str(f.relative_to(ROOT)) for f in files if f.resolve() != here and pattern.search(f.read_text()))
    assert citing == []


REPO_PATH = re.compile(r"\b((?:tests|corral_core|corral_tui|benchmarks|docs|sample_tasks)/[\w/.-]*\w\.\w+)")


def test_every_file_pyproject_cites_is_in_the_repository() -> None:
    """pyproject.toml's comments name the files a pin or a setting is for: each is where it says."""
    cited = REPO_PATH.findall((ROOT / "pyproject.toml").read_text())
    assert cited and not [path for path in cited if not (ROOT / path).exists()]


def test_the_home_of_agent_types_and_approval_policies_is_the_one_docs_architecture_names() -> None:
    """docs/architecture.md's row for shared values names the module that defines each (not one re-exporting it)."""
    row = next(line for line in (ROOT / "docs" / "architecture.md").read_text().splitlines()
               if "agent types and approval policies:" in line)
    home = re.search(r"agent types and approval policies: `([^`]+)`", row)
    assert home is not None
    tree = ast.parse((ROOT / home.group(1)).read_text())
    defined = {target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets
               if isinstance(target, ast.Name)}
    assert {"AGENT_TYPES", "APPROVAL_POLICIES"} <= defined

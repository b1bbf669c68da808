"""Materials tools over a small table shipped with the repository (environments/data/materials.csv).

Used by the `materials_chain` suite (look up a structure, compute a property from it, propose a
modification) and by `impossible` (a material that is not in the table). Everything is local and
deterministic: the scorers check answers against the same table.
"""

from __future__ import annotations

import csv
import json
import math
import re
from functools import lru_cache
from pathlib import Path

from corral_core.env import ScoringContext, extract_number
from corral_core.tools import ToolExecutionError, tool

TABLE = Path(__file__).with_name("data") / "materials.csv"


@lru_cache(maxsize=1)
def materials() -> dict[str, dict[str, str]]:
    """The table keyed by lower-case formula."""
    with TABLE.open(newline="", encoding="utf-8") as handle:
        return {row["formula"].lower(): row for row in csv.DictReader(handle)}


def find(formula: str) -> dict[str, str] | None:
    key = formula.strip().lower()
    table = materials()
    if key in table:
        return table[key]
    return next((row for row in table.values() if row["name"].lower() == key), None)


@tool(render="json")
def lookup_material(formula: str) -> str:
    """Look up a material's crystal structure in the materials table.

    [BRIEF] Return the structure type, space group and lattice constants of a material. [/BRIEF]

    [DETAILED] The table holds about fifteen common semiconductors and insulators. Lattice
    constants are in angstrom; `lattice_c` is empty for cubic structures. [/DETAILED]

    [PROCEDURAL] Call this first whenever a task names a material: every later step needs its
    structure and lattice constants. [/PROCEDURAL]

    [WORKFLOW_INTEGRATION] Feed `structure`, `lattice_a` and `lattice_c` into cell_volume; use
    list_materials to find candidates with the same structure. [/WORKFLOW_INTEGRATION]

    [SYNTACTICAL] `formula` is a chemical formula such as "GaAs" or a common name such as
    "silicon"; matching ignores case. [/SYNTACTICAL]

    [LIMITATIONS] Materials outside the table are reported as not found; the tool never
    guesses. [/LIMITATIONS]

    [EXAMPLES] lookup_material("GaAs") returns {"formula": "GaAs", "structure": "zincblende",
    "lattice_a": 5.653, ...}. [/EXAMPLES]

    Args:
        formula: Chemical formula or common name of the material.

    Returns:
        The material's row as JSON.
    """
    row = find(formula)
    if row is None:
        raise ToolExecutionError(f"Material {formula!r} is not in the materials table.")
    return json.dumps({key: _typed(value) for key, value in row.items()})


@tool(render="table")
def list_materials(structure: str) -> str:
    """List the materials of one structure type with their lattice constants.

    [BRIEF] List materials sharing a structure type, largest lattice constant first. [/BRIEF]

    [PROCEDURAL] Use it to propose substitutions: candidates with the same structure are the
    realistic ones. [/PROCEDURAL]

    [SYNTACTICAL] `structure` is one of diamond, zincblende, wurtzite, rocksalt, rutile. [/SYNTACTICAL]

    Args:
        structure: Structure type to list.

    Returns:
        JSON rows with formula, name, lattice_a and band gap.
    """
    rows = [row for row in materials().values() if row["structure"] == structure.strip().lower()]
    if not rows:
        raise ToolExecutionError(f"No materials with structure {structure!r}.")
    rows.sort(key=lambda row: -float(row["lattice_a"]))
    return json.dumps([{k: _typed(row[k]) for k in ("formula", "name", "lattice_a", "band_gap_ev")} for row in rows])


@tool
def cell_volume(structure: str, lattice_a: float, lattice_c: float | None = None) -> float:
    """Compute the volume of the conventional unit cell in cubic angstrom.

    [BRIEF] Unit cell volume from the structure type and lattice constants. [/BRIEF]

    [DETAILED] Cubic structures (diamond, zincblende, rocksalt): a^3. Hexagonal wurtzite:
    (sqrt(3)/2) a^2 c. Tetragonal rutile: a^2 c. [/DETAILED]

    [SYNTACTICAL] `lattice_c` is required for wurtzite and rutile and ignored otherwise. [/SYNTACTICAL]

    Args:
        structure: Structure type (diamond, zincblende, wurtzite, rocksalt, rutile).
        lattice_a: Lattice constant a in angstrom.
        lattice_c: Lattice constant c in angstrom, for non-cubic structures.

    Returns:
        The volume in cubic angstrom, rounded to two decimals.
    """
    kind = structure.strip().lower()
    if kind in ("diamond", "zincblende", "rocksalt"):
        return round(lattice_a**3, 2)
    if lattice_c is None:
        raise ToolExecutionError(f"{structure} needs lattice_c.")
    if kind == "wurtzite":
        return round(math.sqrt(3) / 2 * lattice_a**2 * lattice_c, 2)
    if kind == "rutile":
        return round(lattice_a**2 * lattice_c, 2)
    raise ToolExecutionError(f"Unknown structure {structure!r}.")


def _typed(value: str) -> object:
    if value == "":
        return None
    try:
        return float(value)
    except ValueError:
        return value


# --- scorers for materials_chain ----------------------------------------------------------------


def score_structure(answer: str | None, context: ScoringContext) -> tuple[float, str]:
    """Full credit for the right structure type and lattice constant (within 0.01 angstrom)."""
    row = find(str(context.expected))
    text = (answer or "").lower()
    has_structure = row is not None and row["structure"] in text
    number = extract_number(answer)
    has_lattice = row is not None and number is not None and abs(number - float(row["lattice_a"])) <= 0.01
    score = 0.5 * has_structure + 0.5 * has_lattice
    structure = "ok" if has_structure else "missing"
    lattice = "ok" if has_lattice else "missing"
    return score, f"structure {structure}, lattice constant {lattice}"


def score_volume(answer: str | None, context: ScoringContext) -> tuple[float, str]:
    """Partial credit: 1.0 within 0.5% of the true volume, 0.5 within 5%, else 0."""
    truth = float(context.expected)
    got = extract_number(answer)
    if got is None:
        return 0.0, "no number in the answer"
    error = abs(got - truth) / truth
    if error <= 0.005:
        return 1.0, f"{got:g} within 0.5% of {truth:g}"
    if error <= 0.05:
        return 0.5, f"{got:g} within 5% of {truth:g} (partial credit)"
    return 0.0, f"{got:g} is {error:.0%} off {truth:g}"


def score_substitution(answer: str | None, context: ScoringContext) -> tuple[float, str]:
    """1.0 for a table material of the same structure with a larger lattice constant than the base."""
    base = find(str(context.expected))
    words = re.findall(r"[A-Za-z][A-Za-z0-9]*", answer or "")
    candidates = [find(word) for word in words]
    candidates = [c for c in candidates if c is not None and c is not base]
    if base is None or not candidates:
        return 0.0, "no material from the table named"
    pick = candidates[-1]
    if pick["structure"] != base["structure"]:
        return 0.0, f"{pick['formula']} is {pick['structure']}, not {base['structure']}"
    if float(pick["lattice_a"]) <= float(base["lattice_a"]):
        return 0.0, f"{pick['formula']} does not have a larger lattice constant than {base['formula']}"
    return 1.0, f"{pick['formula']} ({pick['lattice_a']} A) enlarges the {base['structure']} lattice"

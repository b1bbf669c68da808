"""A materials-lab environment module written the way Corral environment modules are written.

Ported from Corral by changing the imports only (the block marked below); everything else is
Corral's idiom: a `Tool` subclass built from `ToolArgument`s, `@tool` functions (one with a hidden
argument the environment supplies), an `Environment` subclass with its own constructor that sets
its attributes before `super().__init__` and adds its tools after, `score()` reading
`self.state`, an `environments` dict, `create_benchmark_server(environments)` and
`run_server(app, port=...)` under `__main__`.
"""

import json
import math
import os
import tempfile

# --- the only lines that differ from the Corral original -----------------------------------------
# from corral.backend.env import Environment
# from corral.backend.schema import ToolArgument
# from corral.backend.server import create_benchmark_server, run_server
# from corral.backend.tool import Tool, tool
from corral_core.corral import Environment, Tool, ToolArgument, create_benchmark_server, run_server, tool

# -------------------------------------------------------------------------------------------------

MATERIALS = {
    "Si": {"density": 2.329, "lattice_a": 5.431, "band_gap": 1.12},
    "GaAs": {"density": 5.32, "lattice_a": 5.653, "band_gap": 1.42},
    "Cu": {"density": 8.96, "lattice_a": 3.615, "band_gap": 0.0},
}
BASE_WORK_DIR = os.environ.get("LAB_WORK_DIR") or tempfile.mkdtemp(prefix="materials-lab-")


class UnitConverter(Tool):
    """Converts lengths between units."""

    FACTORS = {"angstrom": 1e-10, "nm": 1e-9, "um": 1e-6, "mm": 1e-3, "m": 1.0}

    def __init__(self):
        super().__init__(
            name="unit_converter",
            description=(
                "Convert a length from one unit to another.\n\n"
                "[BRIEF] Length unit converter. [/BRIEF]\n"
                "[DETAILED] Converts through metres; supports angstrom, nm, um, mm and m. [/DETAILED]"
            ),
            arguments=[
                ToolArgument(name="value", type="float", description="The length to convert"),
                ToolArgument(
                    name="from_unit",
                    type="str",
                    description="Unit of the value",
                    choices=["angstrom", "nm", "um", "mm", "m"],
                ),
                ToolArgument(
                    name="to_unit",
                    type="str",
                    description="Unit to convert to",
                    choices=["angstrom", "nm", "um", "mm", "m"],
                ),
            ],
        )

    def execute(self, **kwargs):
        value = float(kwargs["value"])
        result = value * self.FACTORS[kwargs["from_unit"]] / self.FACTORS[kwargs["to_unit"]]
        return f"{result:.6g}"


@tool
def lookup_material(formula: str) -> str:
    """Look up the properties of a material.

    [BRIEF] Material property lookup. [/BRIEF]
    [DETAILED] Returns density (g/cm^3), cubic lattice constant (angstrom) and band gap (eV)
    as a JSON object. [/DETAILED]

    Args:
        formula: Chemical formula of the material (choices: ["Si", "GaAs", "Cu"])

    Returns:
        A JSON object with the material's properties.
    """
    return json.dumps(MATERIALS[formula])


@tool(hidden_args=["api_key"])
def query_database(query: str, api_key: str = "") -> str:
    """Query the lab database for one property, as "<formula>.<property>".

    Args:
        query: What to look up, for example "Si.band_gap".
    """
    if api_key != "lab-secret":
        raise PermissionError("the database refused the API key")
    formula, prop = query.split(".")
    return str(MATERIALS[formula][prop])


@tool
def cell_volume(lattice_a: float) -> float:
    """Volume of a cubic unit cell in cubic angstrom.

    Args:
        lattice_a: Lattice constant in angstrom.
    """
    return lattice_a**3


class MaterialsLab(Environment):
    """One question about a material, scored against a known value."""

    def __init__(self, task_id, question, expected, tolerance=1e-3, base_work_dir=BASE_WORK_DIR):
        self.question = question
        self.expected = expected
        self.tolerance = tolerance
        super().__init__(task_id, base_work_dir)
        self.hidden_args = {"api_key": "lab-secret"}
        self.add_tool(UnitConverter())
        self.add_tool(lookup_material)
        self.add_tool(query_database)
        self.add_tool(cell_volume)

    def get_task_prompt(self):
        return f"{self.question} Answer with the number only."

    def score(self):
        try:
            answer = float(self.state.submitted_answer)
        except (TypeError, ValueError):
            return 0.0
        if not math.isclose(answer, self.expected, rel_tol=self.tolerance):
            return 0.0
        used_tools = {call.tool_name for call in self.state.tool_calls}
        return 1.0 if used_tools else 0.5  # a guessed right answer earns half


environments = {
    "si_lattice_nm": MaterialsLab("si_lattice_nm", "What is the lattice constant of silicon in nm?", 0.5431),
    "gaas_band_gap": MaterialsLab("gaas_band_gap", "What is the band gap of GaAs in eV?", 1.42),
    "cu_cell_volume": MaterialsLab(
        "cu_cell_volume", "What is the volume of the cubic unit cell of copper in cubic angstrom?", 47.24, 1e-2
    ),
}

app = create_benchmark_server(environments)

if __name__ == "__main__":
    run_server(app, port=int(os.environ.get("LAB_PORT", "8000")))

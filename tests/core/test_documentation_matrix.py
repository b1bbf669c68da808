"""Every tool source x {overlay, derived, tagged} x arms: the four channels agree at every level,
levels are monotone, and a component subset shows exactly its components.

The suite (data/docmatrix) has, for each source (Python, http, cli, builtin, mcp), a tool without tags
and one with Corral's tags; overlay.yaml documents every tool. Every text carries a marker
`MK_<tool>_<component>[_<argument>]` (overlay texts `MK_ov<tool>_...`), so what shows is read off the
markers, never off our renderer's own output.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from string import Template
from typing import Any

import pytest

from corral_core.docsize import CHANNELS, channel_payload
from corral_core.env import Suite, load_suite
from corral_core.tools import Tool, ToolVerbosity

DATA = Path(__file__).parent / "data" / "docmatrix"
LEVELS = list(ToolVerbosity)
MARKER = re.compile(r"MK_[a-z]+_[a-z]+(?:_[a-z]+)?")
SOURCES = {"python": "py", "http": "http", "cli": "cli", "builtin": "builtin", "mcp": "mcp"}
SUBSET = ("brief", "syntactical")
# mode -> (which of the source's two tools, the variant that shows it)
MODES = {"tagged": ("tagged", "original"), "derived": ("plain", "original"), "overlay": ("plain", "rewritten"),
         "overlay-over-tags": ("tagged", "rewritten")}
ARMS = [None, SUBSET]  # all components, and a component subset


def write_suite(folder: Path) -> Path:
    text = Template((DATA / "suite.yaml.template").read_text()).substitute(
        env=DATA / "tools_env.py", overlay=DATA / "overlay.yaml", python=sys.executable, server=DATA / "mcp_server.py")
    path = folder / "suite.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Suite:
    return load_suite(write_suite(tmp_path_factory.mktemp("docmatrix")))


def _tool(suite: Suite, source: str, mode: str, components: tuple[str, ...] | None) -> Tool:
    which, variant = MODES[mode]
    return suite.view(variant, components)[f"{SOURCES[source]}_{which}"]


def _guide_texts(guide: str) -> tuple[str, dict[str, str]]:
    if guide.startswith("Available Tools:\n**"):  # minimal: `**name**: description`, argument names only
        return guide.split("**: ", 1)[1].split("\nArguments:", 1)[0], {}
    description = guide.split("\nDescription: ", 1)[1].split("\nArguments:", 1)[0]
    arguments = {}
    for line in guide.split("\nArguments:\n", 1)[1].split("\n\nHow to use tools:", 1)[0].splitlines():
        match = re.match(r"^- (\w+) \([^)]*\): ?(.*)$", line)
        assert match, line
        arguments[match.group(1)] = re.sub(r" ?\(choices: \[.*\]\)$", "", match.group(2))
    return description, arguments


def channel_texts(tool: Tool, level: ToolVerbosity) -> dict[str, tuple[str, dict[str, str]]]:
    """channel -> (the tool's description, {argument: its text}) as that channel carries them."""
    seen: dict[str, tuple[str, dict[str, str]]] = {}
    payloads: dict[str, Any] = {channel: channel_payload([tool], level, channel) for channel in CHANNELS}
    seen["guide"] = _guide_texts(payloads["guide"])
    (e2,) = payloads["tools"]
    seen["tools"] = (e2["description"], {a["name"]: a.get("description") or "" for a in e2["arguments"]})
    (schema,) = payloads["schema"]
    properties = schema["function"]["parameters"]["properties"]
    seen["schema"] = (schema["function"]["description"], {n: p.get("description", "") for n, p in properties.items()})
    (mcp,) = payloads["mcp"]
    listed = mcp["inputSchema"]["properties"]
    seen["mcp"] = (mcp["description"], {n: p.get("description", "") for n, p in listed.items()})
    if level is ToolVerbosity.MINIMAL:  # the guide names the arguments only
        seen["guide"] = (seen["guide"][0], {name: "" for name in seen["tools"][1]})
    return seen


def markers(tool: Tool, level: ToolVerbosity) -> set[str]:
    return set(MARKER.findall(json.dumps([channel_payload([tool], level, channel) for channel in CHANNELS])))


@pytest.mark.parametrize("components", ARMS, ids=["all", "subset"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("source", SOURCES)
def test_the_four_channels_agree_and_levels_are_monotone(suite: Suite, source: str, mode: str,
                                                         components: tuple[str, ...] | None) -> None:
    tool = _tool(suite, source, mode, components)
    shown = []
    for level in LEVELS:
        texts = channel_texts(tool, level)
        assert len(set(json.dumps(t, sort_keys=True) for t in texts.values())) == 1, (level, texts)
        shown.append(markers(tool, level))
    for lower, higher, level in zip(shown, shown[1:], LEVELS[1:], strict=False):
        assert lower <= higher, f"{sorted(lower - higher)} shown below {level.value} but not at it"
    if components is None:
        assert shown[0] < shown[-1]  # a real gradient, whatever wrote the documentation
    assert shown[-1]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("source", SOURCES)
def test_a_component_subset_shows_exactly_its_components(suite: Suite, source: str, mode: str) -> None:
    everything = markers(_tool(suite, source, mode, None), ToolVerbosity.FULL)
    subset = markers(_tool(suite, source, mode, SUBSET), ToolVerbosity.FULL)
    assert subset == {m for m in everything if m.split("_")[2] in SUBSET}
    assert subset, "the subset shows something"


@pytest.mark.parametrize("source", SOURCES)
def test_an_overlay_replaces_every_component_it_gives(suite: Suite, source: str) -> None:
    for which in ("plain", "tagged"):
        tool = suite.view("rewritten", None)[f"{SOURCES[source]}_{which}"]
        full = markers(tool, ToolVerbosity.FULL)
        assert full and all(m.startswith("MK_ov") for m in full)  # the tool's own texts are all replaced
        assert {m.split("_")[2] for m in full} == {"brief", "detailed", "returns", "procedural", "contextual",
                                                   "workflow", "syntactical", "examples", "raises", "limitations"}
        # each component from its level up (the table in docs/documentation-levels.md)
        assert {m.split("_")[2] for m in markers(tool, ToolVerbosity.BRIEF)} == {"brief"}
        assert {m.split("_")[2] for m in markers(tool, ToolVerbosity.PROCEDURAL)} == {"brief", "detailed", "returns",
                                                                                       "procedural"}


def test_a_python_docstrings_body_reaches_detailed(suite: Suite) -> None:
    tool = suite.tools["py_plain"]  # no tags, no overlay: the derived rule
    shown = {level.value: markers(tool, level) for level in LEVELS}
    assert "MK_pyplain_body" not in shown["brief"]
    assert "MK_pyplain_body" in shown["detailed"] and "MK_pyplain_returns" in shown["detailed"]
    assert shown["minimal"] == {"MK_pyplain_brief"}
    assert shown["brief"] == {"MK_pyplain_brief", "MK_pyplain_brief_query", "MK_pyplain_brief_limit"}
    # as written (Corral's rendering), the body reached no level at all
    assert all("MK_pyplain_body" not in markers(suite.own_tools["py_plain"], level) for level in LEVELS)

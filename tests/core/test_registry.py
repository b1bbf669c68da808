"""The one Registry class: kinds registered by decorator, keys checked with a did-you-mean, entry points
loaded once, and a broken plugin named by its package (tests/plugins/install.py installs them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral_core.env.scoring import SCORERS, build_scorer
from corral_core.registry import REGISTRIES, KindError, PluginError, Registry, did_you_mean
from tests.plugins.install import on_path, write_dist_info


def test_a_kind_is_registered_once_with_its_keys_and_doc() -> None:
    widgets: Registry[object] = Registry("test_widgets", "widget kind", title="Widgets")
    REGISTRIES.pop("test_widgets")  # not one of the project's families (`corral-tui kinds`)

    @widgets.kind("round", doc="a round widget.", options={"radius": "how round"})
    def make_round() -> str:
        return "round"

    assert widgets.names() == ("round",) and widgets.get("round").factory is make_round
    assert widgets.get("round").options == {"radius": "how round"}
    assert SCORERS.get("exact").package is None, "corral-tui's own kinds come from no other package"
    with pytest.raises(ValueError, match="'round' is already registered by"):
        widgets.add("round", make_round, doc="again.")
    with pytest.raises(ValueError, match="one-line doc"):
        widgets.add("square", make_round, doc="")


def test_an_unknown_kind_or_key_is_refused_with_the_closest_name() -> None:
    with pytest.raises(KindError) as caught:
        build_scorer({"type": "numerc"}, 1, lambda name: None)
    assert str(caught.value).startswith("unknown scoring type 'numerc' (did you mean 'numeric'?); use one of: exact,")
    with pytest.raises(KindError) as caught:
        build_scorer({"type": "numeric", "tolerence": 0.1}, 1, lambda name: None)
    assert str(caught.value) == ("unknown key 'tolerence' for scoring type 'numeric' (did you mean 'tolerance'?); "
                                 "its keys: tolerance, relative")
    assert caught.value.key == "tolerence"
    assert did_you_mean("zzz", ["tool", "risk"]) == ""


def test_a_mistyped_scoring_key_points_at_its_line(tmp_path: Path) -> None:
    from corral_core.env.suite import load_suite
    from corral_core.errors import UserError

    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\ntasks:\n  - id: add\n    prompt: 1+1?\n    answer: 2\n"
                     "    scoring: {type: numeric, tolerence: 0.5}\n", encoding="utf-8")
    with pytest.raises(UserError) as caught:
        load_suite(suite)
    message = str(caught.value)
    assert "line 6" in message and "unknown key 'tolerence'" in message and "did you mean 'tolerance'" in message


def test_a_plugin_that_fails_to_import_is_named_by_its_package(tmp_path: Path) -> None:
    (tmp_path / "corral_tui_brokenplugin.py").write_text("raise ImportError('needs numpy 3')\n", encoding="utf-8")
    write_dist_info(tmp_path, "corral-tui-brokenplugin", "2.0",
                    {"corral_tui.scorers": {"broken": "corral_tui_brokenplugin:scorer"}})
    with on_path(tmp_path):
        with pytest.raises(PluginError) as caught:
            SCORERS.names()
        with pytest.raises(PluginError):  # looked up once: the same answer, not a second import
            SCORERS.get("exact")
    message = str(caught.value)
    assert "the plugin package corral-tui-brokenplugin failed to load" in message
    assert "ImportError: needs numpy 3" in message and "pip uninstall corral-tui-brokenplugin" in message
    assert "exact" in SCORERS.names()  # gone with the package


def test_a_plugin_that_registers_nothing_under_its_name_says_so(tmp_path: Path) -> None:
    (tmp_path / "corral_tui_quietplugin.py").write_text("def scorer(spec, expected, resolve):\n    pass\n",
                                                        encoding="utf-8")
    write_dist_info(tmp_path, "corral-tui-quietplugin", "1.0",
                    {"corral_tui.scorers": {"quiet": "corral_tui_quietplugin:scorer"}})
    with on_path(tmp_path), pytest.raises(PluginError) as caught:
        SCORERS.get("quiet")
    assert "corral-tui-quietplugin names scoring type 'quiet'" in str(caught.value)
    assert "@SCORERS.kind('quiet', ...)" in str(caught.value)


def test_a_plugin_imported_before_the_lookup_is_still_its_package(tmp_path: Path) -> None:
    import importlib

    from tests.plugins.install import installed

    with installed(tmp_path):
        importlib.import_module("corral_tui_testplugin")  # an environment module importing it, say
        assert SCORERS.get("contains").package == "corral-tui-testplugin"


def test_a_tool_declaration_gets_the_closest_type_and_key() -> None:
    from corral_core.tools.factory import ToolDeclarationError, build_tool

    with pytest.raises(ToolDeclarationError, match=r"unknown tool type 'htp' \(did you mean 'http'\?\)"):
        build_tool({"name": "w", "type": "htp"})
    with pytest.raises(ToolDeclarationError, match=r"unknown key 'urll' for a http tool \(did you mean 'url'\?\)"):
        build_tool({"name": "w", "type": "http", "urll": "https://x/"})

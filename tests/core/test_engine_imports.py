"""The engine runs without the TUI: no corral_core module may pull in Textual (or corral_tui)."""

import pkgutil
import subprocess
import sys

import corral_core

SCRIPT = """
import importlib, sys
for name in {modules!r}:
    importlib.import_module(name)
    leaked = sorted(m for m in ("textual", "corral_tui") if m in sys.modules)
    if leaked:
        print(f"{{name}} imports {{', '.join(leaked)}}")
        sys.exit(1)
print("clean", len({modules!r}))
"""


def engine_modules() -> list[str]:
    return ["corral_core"] + [
        info.name for info in pkgutil.walk_packages(corral_core.__path__, prefix="corral_core.")
    ]


def test_every_engine_module_imports_without_textual():
    modules = engine_modules()
    assert len(modules) > 10
    result = subprocess.run([sys.executable, "-c", SCRIPT.format(modules=modules)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("clean")


def test_importing_the_engine_does_not_import_litellm():
    code = "import corral_core.llm, corral_core.agents, sys; print('litellm' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_optional_integrations_are_imported_only_when_used():
    """The [hf], [inspect] and [otel] extras: importing any engine module loads none of them."""
    code = ("import importlib, sys\n"
            f"for name in {engine_modules()!r}: importlib.import_module(name)\n"
            "print(sorted(m for m in ('datasets', 'inspect_ai', 'opentelemetry.sdk') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"

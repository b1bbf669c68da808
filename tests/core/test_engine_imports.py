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
optional = sorted(m for m in ("datasets", "inspect_ai", "opentelemetry.sdk") if m in sys.modules)
print("clean", len({modules!r}), "optional extras imported:", optional)
"""


def engine_modules() -> list[str]:
    return ["corral_core"] + [
        info.name for info in pkgutil.walk_packages(corral_core.__path__, prefix="corral_core.")
    ]


def test_every_engine_module_imports_without_textual():
    """...nor the optional integrations (the [hf], [inspect] and [otel] extras), imported only when used."""
    modules = engine_modules()
    assert len(modules) > 10
    result = subprocess.run([sys.executable, "-c", SCRIPT.format(modules=modules)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("clean")
    assert result.stdout.strip().endswith("optional extras imported: []")


def test_importing_the_engine_does_not_import_litellm():
    code = "import corral_core.llm, corral_core.agents, sys; print('litellm' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


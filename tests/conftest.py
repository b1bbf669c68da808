"""Test-wide settings: offline litellm, no animations, UTC."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOG", "ERROR")
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
os.environ["TZ"] = "UTC"
# Test traffic stays on loopback: ddgs (which resolves DNS in Rust, out of reach of socket
# patching) is pointed at a closed local proxy port, so a web search fails at once, offline or not.
os.environ["DDGS_PROXY"] = "http://127.0.0.1:9"
# A developer's own defaults (CORRAL_TUI_* variables, ~/.config/corral-tui/config.toml) never reach a test:
# tests that need them set them.
for _name in [n for n in os.environ if n.startswith("CORRAL_TUI_")]:
    del os.environ[_name]
os.environ["XDG_CONFIG_HOME"] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "no-user-config")

"""Test-wide settings: offline litellm, no animations, UTC."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOG", "ERROR")
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
os.environ["TZ"] = "UTC"
# Test traffic stays on loopback: ddgs (which resolves DNS in Rust, out of reach of socket
# patching) is pointed at a closed local proxy port, so a web search fails at once, offline or not.
os.environ["DDGS_PROXY"] = "http://127.0.0.1:9"

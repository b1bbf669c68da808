"""Test-wide settings: offline litellm, no animations, UTC."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOG", "ERROR")
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
os.environ["TZ"] = "UTC"

"""Widgets of the workbench. None of them queries the store or calls an LLM: they draw what the
screens hand them."""

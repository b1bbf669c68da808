"""corral-tui: the Textual workbench on top of corral_core."""

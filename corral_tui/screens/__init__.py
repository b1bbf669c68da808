"""Screens of the workbench: the live workbench, history, a trial's timeline, compare, help and
the modal dialogs (approval, intervention, error)."""

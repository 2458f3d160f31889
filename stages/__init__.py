"""Thin DVC stage entry points: run as ``python -m stages.<name>`` from the repo root."""

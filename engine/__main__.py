"""`python -m engine` runs the CLI."""

from .cli import entry_point

entry_point()

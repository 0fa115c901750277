"""`python -m engine` runs the CLI."""

from .cli.main import entry_point

entry_point()

"""The ``tensegrity`` command line: argument parsing and printing only (the work is in the engine's
subpackages). :func:`main` (:mod:`.app`) is the entry point; one module per command family."""
from tensegrity_engine.cli.app import main

__all__ = ["main"]

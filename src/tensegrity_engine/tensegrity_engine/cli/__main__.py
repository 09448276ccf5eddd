"""``python -m tensegrity_engine.cli``: the ``tensegrity`` command."""
import sys

from tensegrity_engine.cli.app import main

sys.exit(main())

"""Every Python example of docs/learning.md runs as written, in the order the page gives them (one namespace:
later examples use the names earlier ones made)."""
import re
from pathlib import Path

import pytest

pytest.importorskip("gymnasium")

PAGE = Path(__file__).resolve().parents[3] / "docs" / "learning.md"


def python_blocks(text: str) -> list:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_the_learning_pages_python_examples_run():
    blocks = python_blocks(PAGE.read_text())
    assert len(blocks) >= 2                           # the ids example and the realism example
    namespace = {}
    for code in blocks:
        exec(compile(code, str(PAGE), "exec"), namespace)      # noqa: S102  (our own documentation)
    assert namespace["info"]["min_clearance"] > 0.01          # the six-bar far from touching itself

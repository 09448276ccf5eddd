"""The engine commands the handbook shows run as written (slow tier: ./test.sh -m slow).

Every ``.venv/bin/tensegrity ...`` line of a ```bash block in README.md and docs/*.md is run, in the order
the pages give them, in a scratch directory with the repository's ``.venv`` linked in, unless it names a
placeholder the reader fills in (MODEL.yaml, cases.yaml, HOST, ``[...]`` options, their own CSV files).
A command passes when it exits 0 (``sweep``'s Monte-Carlo example is shortened to 4 draws of 0.2 s: the
same code path)."""
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PLACEHOLDERS = ("MODEL", "HOST", "cases.yaml", "[", "...", "my_inputs.csv", "segs.csv", "runs/exp2", "OUT")
SHORTEN = {"--monte-carlo 100": "--monte-carlo 4", "--duration 5 ": "--duration 0.2 ", "--duration 10 ": "--duration 0.5 "}


def doc_commands() -> list:
    """[(page, command)] of the runnable engine command lines, continuation lines joined."""
    out = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text, inside = page.read_text(), False
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith("```"):
                inside = line.strip() == "```bash" and not inside
                i += 1
                continue
            if inside and line.startswith(".venv/bin/tensegrity "):
                cmd = line
                while cmd.rstrip().endswith("\\") and i + 1 < len(lines):
                    i += 1
                    cmd = cmd.rstrip()[:-1] + " " + lines[i].strip()
                cmd = re.sub(r"\s+#.*$", "", cmd).strip()
                if not any(p in cmd for p in PLACEHOLDERS):
                    out.append((page.relative_to(ROOT).as_posix(), cmd))
            i += 1
    return out


@pytest.mark.slow
def test_the_handbooks_engine_commands_run(tmp_path):
    commands = doc_commands()
    assert len(commands) >= 8, commands            # the extraction found the pages' examples
    os.symlink(ROOT / ".venv", tmp_path / ".venv")
    failures = []
    for page, cmd in commands:
        for long, short in SHORTEN.items():
            cmd = cmd.replace(long, short)
        r = subprocess.run(shlex.split(cmd), cwd=tmp_path, capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, MPLBACKEND="Agg"))
        if r.returncode != 0:
            failures.append(f"{page}: `{cmd}` exited {r.returncode}: {(r.stderr or r.stdout)[-400:]}")
    assert not failures, "\n".join(failures)

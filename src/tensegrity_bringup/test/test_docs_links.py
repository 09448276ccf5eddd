"""Every relative link in README.md and docs/*.md resolves: the file or directory exists (from the page's
own directory), and an anchor into a Markdown page names one of its headings (GitHub's heading ids).

External links (http:, https:, mailto:, ...) are not fetched. Links inside fenced code blocks and inline
code are not links and are skipped. Runs without ROS 2 (standard library only).
"""
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))

# Files the pages already show but that still have to be produced (path from the repository root). A
# missing file listed here is not a failure of test_links but an expected failure (xfail) of
# test_pending_files, which fails once the file exists, so the entry gets removed.
PENDING: dict = {}

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def _split(text):
    """(prose, headings) of a Markdown page: the text outside fenced code blocks (inline code removed)
    and the heading lines outside them."""
    prose, headings, fence = [], [], None
    for line in text.splitlines():
        m = FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        prose.append(line)
        h = HEADING.match(line)
        if h:
            headings.append(h.group(2))
    return CODE_SPAN.sub("", "\n".join(prose)), headings


def _slug(heading):
    """GitHub's id for a heading: the rendered text, lower case, punctuation removed, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchor_cache = {}


def _anchors(page):
    if page not in _anchor_cache:
        ids, seen = set(), {}
        for heading in _split(page.read_text(encoding="utf-8"))[1]:
            base = _slug(heading)
            n = seen.get(base, 0)
            seen[base] = n + 1
            ids.add(base if n == 0 else f"{base}-{n}")
        _anchor_cache[page] = ids
    return _anchor_cache[page]


def _links(page):
    prose, _ = _split(page.read_text(encoding="utf-8"))
    return [m.group(1) for m in INLINE_LINK.finditer(prose)] + [m.group(1) for m in REFERENCE_DEF.finditer(prose)]


def _rel(path):
    """The path from the repository root (posix), or the absolute path outside it."""
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def _problems(page):
    """(link, why) for every broken relative link of the page; pending files are left out."""
    problems = []
    for link in _links(page):
        if EXTERNAL.match(link) or link.startswith("//"):
            continue
        path_part, _, anchor = link.partition("#")
        path_part = unquote(path_part.split("?")[0])
        target = (page.parent / path_part).resolve() if path_part else page
        if not target.exists():
            if _rel(target) not in PENDING:
                problems.append((link, f"no such file or directory: {_rel(target)}"))
            continue
        if anchor and target.is_file() and target.suffix == ".md" and unquote(anchor) not in _anchors(target):
            problems.append((link, f"no heading with the id '#{anchor}' in {_rel(target)}"))
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_links(page):
    problems = _problems(page)
    assert not problems, f"{page.relative_to(ROOT)}: broken links:\n" + "\n".join(
        f"  ({link}): {why}" for link, why in problems)


def test_pages_found():
    assert (ROOT / "README.md").is_file() and (ROOT / "docs" / "index.md").is_file(), ROOT
    assert all(_links(p) for p in PAGES if p.name in ("README.md", "index.md"))


def test_every_docs_page_is_in_the_index():
    index = ROOT / "docs" / "index.md"
    linked = {(index.parent / unquote(link.partition("#")[0])).resolve() for link in _links(index)}
    missing = [p.name for p in PAGES if p.parent == index.parent and p != index and p.resolve() not in linked]
    assert not missing, f"docs/index.md does not link these pages: {missing}"


def test_pending_files():
    missing = {path: what for path, what in PENDING.items() if not (ROOT / path).exists()}
    done = sorted(set(PENDING) - set(missing))
    assert not done, f"now present, remove from PENDING in {Path(__file__).name}: {done}"
    if missing:
        pytest.xfail("still to be produced: " + "; ".join(f"{p} ({w})" for p, w in sorted(missing.items())))


def test_the_checker_finds_broken_links(tmp_path):
    """The checker itself: a broken file, a broken anchor and a link in code are told apart."""
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other page\n\n## What `./setup.sh` does\n\n## Limits\n## Limits\n")
    page.write_text("# Title\n\n[ok](other.md#what-setupsh-does) [ok2](other.md#limits-1) [self](#title)\n"
                    "[gone](missing.md) [bad anchor](other.md#nope) `[code](nowhere.md)`\n"
                    "```\n[fenced](nowhere2.md)\n```\n[web](https://example.com/x)\n")
    got = [link for link, _ in _problems(page)]
    assert got == ["missing.md", "other.md#nope"], got

"""The front door and the docs: every link points at a file of the repository (none outside it), and the README
stays short enough to read in five minutes."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def test_every_link_in_the_readme_and_docs_names_a_file_of_the_repository() -> None:
    broken = []
    for page in _pages():
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if target.startswith("#"):
                continue
            path = (page.parent / target.split("#", 1)[0]).resolve()
            if "://" in target or target.startswith("/") or not path.is_relative_to(REPO) or not path.exists():
                broken.append(f"{page.relative_to(REPO)}: {target}")
    assert broken == []


def test_the_readme_is_a_front_door() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert 8_000 <= len(text.encode()) <= 15_000
    assert "./install.sh" in text and "./test.sh" in text
    assert "| done |" not in text  # no status table


def test_no_page_is_a_development_log() -> None:
    logs = [f"{page.relative_to(REPO)}: {line.strip()}" for page in _pages()
            for line in page.read_text(encoding="utf-8").splitlines()
            if re.match(r"#+ Session (one|two|three|four|five|six|seven|eight|nine|ten)\b", line.strip())]
    assert logs == []

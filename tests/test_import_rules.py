"""The layers hold: each package imports only what its docstring allows.

An AST walk over the source tree (every import, including the ones inside functions and under TYPE_CHECKING),
so a forbidden import fails here however lazily it is written. The rules are the "never imports" sentences of
the packages' docstrings, as data.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Source folders and the module names they install as (pyproject.toml's package-dir).
SOURCE_DIRS = {"codeoid": "codeoid", "hooks": "codeoid.hooks", "mcp_server": "codeoid.mcp_server",
               "compressors": "codeoid.compressors"}

SHARED = ("codeoid.paths", "codeoid.log", "codeoid.pages", "codeoid.records", "codeoid.text", "codeoid.workspace",
          "codeoid.claude_window",
          "codeoid.exclusions", "codeoid.memory_tools", "codeoid.detached")
ENTRY_POINTS = ("codeoid.cli", "codeoid.hooks", "codeoid.mcp_server", "codeoid.compressors.runner")
SEARCH_STACK = ("codeoid.memory.retrieval", "codeoid.memory.ranking", "codeoid.memory.chunking",
                "codeoid.memory.indexer", "codeoid.memory.vector_index", "codeoid.memory.chroma_server",
                "codeoid.memory.chroma_embedding", "codeoid.memory.embedding", "codeoid.memory.topics",
                "codeoid.memory.index_builder")

# (who, what it may import from codeoid: None = anything not forbidden, what it must never import)
RULES: dict[str, tuple[tuple[str, ...] | None, tuple[str, ...]]] = {
    # The bottom layers: an allow-list.
    "shared": (SHARED, ()),
    "codeoid.store": (("codeoid.store",) + SHARED, ()),
    # The layers above: deny-lists.
    "codeoid.capture": (None, SEARCH_STACK + ("codeoid.memory.privacy", "codeoid.setup.install",
                                              "codeoid.setup.doctor", "codeoid.fork") + ENTRY_POINTS),
    "codeoid.memory": (None, ("codeoid.capture", "codeoid.setup", "codeoid.rotation", "codeoid.fork")
                       + ENTRY_POINTS),
    "codeoid.setup": (None, ("codeoid.capture.events", "codeoid.capture.ingest", "codeoid.memory")
                      + ENTRY_POINTS),
    "codeoid.rotation": (None, ("codeoid.memory", "codeoid.fork") + ENTRY_POINTS),
    "codeoid.fork": (None, ("codeoid.memory",) + ENTRY_POINTS),
    "codeoid.health": (None, ENTRY_POINTS + ("codeoid.viewer",)),
    "codeoid.viewer": (None, ("codeoid.capture", "codeoid.rotation", "codeoid.fork", "codeoid.setup.install")
                       + ENTRY_POINTS),
    "codeoid.compressors": (None, ("codeoid.capture", "codeoid.memory", "codeoid.setup", "codeoid.rotation",
                                   "codeoid.fork", "codeoid.cli", "codeoid.hooks", "codeoid.mcp_server")),
    "codeoid.hooks": (None, ("codeoid.memory.retrieval", "codeoid.memory.vector_index", "codeoid.memory.indexer",
                             "codeoid.memory.embedding", "codeoid.cli", "codeoid.mcp_server")),
    "codeoid.mcp_server": (None, ("codeoid.cli", "codeoid.hooks", "codeoid.setup.install")),
    "codeoid.service": (None, ("codeoid.cli", "codeoid.hooks", "codeoid.setup", "codeoid.rotation", "codeoid.fork",
                               "codeoid.capture")),
}


def module_name(path: Path) -> str:
    relative = path.relative_to(ROOT)
    parts = [SOURCE_DIRS[relative.parts[0]], *relative.with_suffix("").parts[1:]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, *, is_package: bool) -> set[str]:
    """Every codeoid module `source` imports; `from codeoid.x import y` counts as codeoid.x.y when y is a module,
    which is checked by the rules only as a prefix, so naming both is harmless."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name == "codeoid" or name.startswith("codeoid.")}


def rule_for(module: str) -> str | None:
    if module in SHARED:
        return "shared"
    matches = [who for who in RULES if module == who or module.startswith(who + ".")]
    return max(matches, key=len) if matches else None


def under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def violations(module: str, imported: set[str]) -> list[str]:
    who = rule_for(module)
    if who is None:
        return []
    allowed, forbidden = RULES[who]
    found = []
    for name in sorted(imported - {"codeoid"}):  # the bare package: what was taken from it is checked by name
        if under(name, (module,)):
            continue
        if allowed is not None and not under(name, allowed):
            found.append(f"{module} imports {name}, outside what {who} may import")
        elif under(name, forbidden):
            found.append(f"{module} imports {name}, which {who} must never import")
    return found


def source_files() -> list[Path]:
    return sorted(path for folder in SOURCE_DIRS for path in (ROOT / folder).rglob("*.py"))


def test_every_package_keeps_to_its_import_rules() -> None:
    problems = []
    for path in source_files():
        module = module_name(path)
        problems += violations(module, imports_of(path.read_text(), module, is_package=path.name == "__init__.py"))
    assert problems == []


@pytest.mark.parametrize(("module", "source", "why"), [
    ("codeoid.store.queries", "from codeoid.memory import retrieval", "the store imports something above it"),
    ("codeoid.store.raw", "def f():\n    from codeoid.capture import ingest\n", "a lazy import counts too"),
    ("codeoid.capture.events", "from codeoid.memory.vector_index import VectorIndex", "capture loads the search stack"),
    ("codeoid.capture.spool", "from codeoid.cli import cli", "capture imports the CLI"),
    ("codeoid.memory.retrieval", "from codeoid.capture import ingest", "memory imports capture"),
    ("codeoid.paths", "from codeoid.store import db", "a shared helper imports a package"),
    ("codeoid.compressors.engine", "from ..memory import retrieval", "a relative import is resolved"),
])
def test_a_forbidden_import_is_caught(module: str, source: str, why: str) -> None:
    assert violations(module, imports_of(source, module, is_package=False)), why


def test_allowed_imports_pass() -> None:
    assert violations("codeoid.store.capture", imports_of(
        "from codeoid import text\nfrom codeoid.store import episode_text\n", "codeoid.store.capture",
        is_package=False)) == []
    assert violations("codeoid.capture.events", imports_of(
        "from codeoid.memory import workspace_index\n", "codeoid.capture.events", is_package=False)) == []

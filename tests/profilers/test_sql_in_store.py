"""SQL lives only in the session store's modules.

Readers (the Session, the TUI, exporters, reports) call the store's functions; they never
write a statement. So a column or table changes in one room, and a reader's cost (how
many statements a page takes) is visible where the statements are. This test reads every
string literal of the source tree (docstrings aside) and fails on one that is SQL outside
:data:`STORE_MODULES`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE_TREE = ("execmode", "profilers", "tui", "benchmarks", "examples")

# The store's modules, the only ones that may hold SQL:
STORE_MODULES = {
    "profilers/store.py",          # creating the file, its connections, meta stamps
    "profilers/session_file.py",   # the checks before anyone reads a session
    "profilers/writer.py",         # the writer thread's inserts
    "profilers/store_queries.py",  # the rows and totals every reader shares
    "profilers/store_pages.py",    # the TUI's tailing, paging and search
}

# A statement's opening as SQLite spells it (upper case, as every statement here is).
SQL = re.compile(
    r"\bSELECT\b[\s\S]*\bFROM\b|^\s*SELECT\b|\bINSERT\s+(OR\s+\w+\s+)?INTO\b"
    r"|\bUPDATE\s+\S+\s+SET\b|\bDELETE\s+FROM\b|\bDROP\s+(TABLE|INDEX|VIEW)\b"
    r"|\bCREATE\s+(TEMP\w*\s+|UNIQUE\s+)?(TABLE|INDEX|VIEW|TRIGGER)\b|^\s*PRAGMA\b")


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value,
                                                                     ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _strings(tree: ast.AST):
    """(line, text) of every string literal; an f-string's text with ``{}`` for each
    value, so that ``f"SELECT {cols} FROM {t}"`` reads as the statement it is."""
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}"
                           for v in node.values)
            yield node.lineno, text
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in skip:
                yield node.lineno, node.value


def sql_outside_the_store() -> list[str]:
    found = []
    for folder in SOURCE_TREE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name in STORE_MODULES:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=name)
            found += [f"{name}:{line}: {text[:70]!r}" for line, text in _strings(tree)
                      if SQL.search(text)]
    return found


def test_sql_is_only_in_the_store_modules():
    found = sql_outside_the_store()
    assert not found, "SQL outside the store's modules (move it into one of them):\n" + \
        "\n".join(found)


def test_the_check_sees_sql_as_readers_wrote_it():
    samples = ['f"SELECT {columns} FROM {source} WHERE x > ?"', '"PRAGMA data_version"',
               '"INSERT OR REPLACE INTO meta (key, value) VALUES (?,?)"',
               "f\"CREATE TEMP TABLE found_{name} (pos INTEGER)\"",
               '("SELECT MAX(m) FROM (SELECT 1) "\n "UNION ALL SELECT 2")']
    for sample in samples:
        tree = ast.parse("sql = " + sample)
        assert any(SQL.search(t) for _, t in _strings(tree)), sample
    prose = ast.parse('text = "select the rows from the table", "Update the view"')
    assert not any(SQL.search(t) for _, t in _strings(prose))
    assert not list(_strings(ast.parse('"""SELECT x FROM y"""')))  # a docstring is prose
    for module in STORE_MODULES:
        assert (ROOT / module).is_file(), f"{module} is listed but does not exist"

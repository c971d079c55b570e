"""Where the built-in sample's documents come from: text the Python installation ships.

One function per Pile subset, each returning ``Candidate`` documents from the standard library
directory (sorted walks, nothing imported: source is parsed with ``ast``). ``SOURCES`` maps
subset names to them; ``datagen.sample.build`` selects, splits and writes.

All of it lies under ``sysconfig.get_paths()["stdlib"]``; ``site-packages``, ``__pycache__``
and the test-suite directories ``test``/``tests``/``idle_test`` are skipped, and so is any file
that is not valid UTF-8 or holds only whitespace:

===================  ========================================================================
subset               documents
===================  ========================================================================
``Github``           standard-library ``.py`` files, one file per document, verbatim.
``StackExchange``    the entries of ``pydoc_data/topics.py`` (the text behind ``help("if")``),
                     one topic per document; read with ``ast.literal_eval``, not imported.
``Wikipedia (en)``   one "article" per module: the module name as a title line, its docstring,
                     then the docstrings of its public top-level classes and functions, each
                     under its name (``ast.get_docstring``; nothing is imported). At least 200
                     characters of prose, or the module is skipped.
``Pile-CC``          the prose files shipped with the stdlib: ``*.txt``, ``*.rst``, ``README*``
                     (``LICENSE.txt``, IDLE's ``NEWS.txt``, ``email/architecture.rst``, ...).
``Enron Emails``     the RFC 5322 messages in ``test/test_email/data/msg_*.txt`` (absent from
                     installations that strip the test suite; the subset is then empty).
===================  ========================================================================
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import glob
import os
import warnings
from collections.abc import Callable, Mapping

_SKIP_DIRS = frozenset(
    {"site-packages", "dist-packages", "__pycache__", "test", "tests", "idle_test"}
)
_MIN_ARTICLE_CHARS = 200


@dataclasses.dataclass(frozen=True)
class Candidate:
    source: str  # path relative to the stdlib, or a pydoc topic key
    load: Callable[[], str | None]  # the document's text; None skips it


def _walk(stdlib_dir: str, keep: Callable[[str], bool]) -> list[str]:
    """Sorted relative POSIX paths of the files whose name ``keep`` accepts."""
    found = []
    for dirpath, dirnames, filenames in os.walk(stdlib_dir):
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS]
        rel_dir = os.path.relpath(dirpath, stdlib_dir)
        for name in filenames:
            if keep(name):
                found.append(os.path.normpath(os.path.join(rel_dir, name)).replace(os.sep, "/"))
    return sorted(found)


def _read_text(path: str) -> str | None:
    """The file as text, or None if it is not valid UTF-8 or holds only whitespace."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if text.strip() else None


def _module_article(path: str, module: str) -> str | None:
    """Module name as title, then the module's and its public classes'/functions' docstrings."""
    source = _read_text(path)
    if source is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning for odd escapes in old modules
            tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    module_doc = ast.get_docstring(tree)
    parts = [module_doc] if module_doc else []
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc and not node.name.startswith("_"):
                parts.append(f"{node.name}\n\n{doc}")
    body = "\n\n".join(parts)
    return f"{module}\n\n{body}" if len(body) >= _MIN_ARTICLE_CHARS else None


def _module_name(rel_path: str) -> str:
    parts = rel_path[: -len(".py")].split("/")
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _github(stdlib_dir: str) -> list[Candidate]:
    return [
        Candidate(rel, functools.partial(_read_text, os.path.join(stdlib_dir, rel)))
        for rel in _walk(stdlib_dir, lambda name: name.endswith(".py"))
    ]


def _wikipedia(stdlib_dir: str) -> list[Candidate]:
    return [
        Candidate(
            rel,
            functools.partial(_module_article, os.path.join(stdlib_dir, rel), _module_name(rel)),
        )
        for rel in _walk(stdlib_dir, lambda name: name.endswith(".py"))
    ]


def _stackexchange(stdlib_dir: str) -> list[Candidate]:
    path = os.path.join(stdlib_dir, "pydoc_data", "topics.py")
    if not os.path.exists(path):
        return []
    topics = {}
    for node in ast.parse(_read_text(path) or "").body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "topics" for t in node.targets
        ):
            topics = ast.literal_eval(node.value)
    return [
        Candidate(key, functools.partial(lambda t: t if t.strip() else None, topics[key]))
        for key in sorted(topics)
    ]


def _pile_cc(stdlib_dir: str) -> list[Candidate]:
    def is_prose(name: str) -> bool:
        return name.endswith((".txt", ".rst")) or name.startswith("README")

    return [
        Candidate(rel, functools.partial(_read_text, os.path.join(stdlib_dir, rel)))
        for rel in _walk(stdlib_dir, is_prose)
    ]


def _enron(stdlib_dir: str) -> list[Candidate]:
    pattern = os.path.join(glob.escape(stdlib_dir), "test", "test_email", "data", "msg_*.txt")
    return [
        Candidate(os.path.relpath(path, stdlib_dir), functools.partial(_read_text, path))
        for path in sorted(glob.glob(pattern))
    ]


SOURCES: Mapping[str, Callable[[str], list[Candidate]]] = {
    "Github": _github,
    "StackExchange": _stackexchange,
    "Wikipedia (en)": _wikipedia,
    "Pile-CC": _pile_cc,
    "Enron Emails": _enron,
}

"""The layout rules of CONVENTIONS.md that a test can hold: imports point one way, no import
cycles between modules, small files, no magic error strings."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("common", "schemas", "tokenizer", "pipeline", "trainer")
# Which packages each package may import (itself always).
ALLOWED = {
    "common": set(),
    "schemas": {"common"},
    "tokenizer": {"common", "schemas"},
    "pipeline": {"common", "schemas", "tokenizer"},
    "trainer": {"common", "schemas"},
}
MAX_LINES = 400


def _modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            yield name, path


MODULES = dict(_modules())


def _imports(name: str, path: pathlib.Path) -> set[str]:
    """Every pilepack module ``path`` imports, at module level or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t in MODULES and t != name)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_imports_point_one_way():
    wrong = []
    for name, targets in sorted(GRAPH.items()):
        package = name.split(".")[0]
        allowed = ALLOWED[package] | {package}
        wrong += [f"{name} imports {t}" for t in sorted(targets) if t.split(".")[0] not in allowed]
    assert not wrong, wrong


def _third_party(path: pathlib.Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_libraries_below_pipeline_are_beam_free():
    # tokenizer/ is a SentencePiece library; common/ and schemas/ are read by the trainer too.
    wrong = [name for name, path in MODULES.items()
             if name.split(".")[0] in ("common", "schemas", "tokenizer")
             and "apache_beam" in _third_party(path)]
    assert not wrong, wrong


def test_no_import_cycles():
    # A package's __init__ importing its own submodules is not a cycle between modules.
    edges = {name: {t for t in targets if not name.startswith(t + ".")}
             for name, targets in GRAPH.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for target in edges[node]:
            if state.get(target) == 1:
                raise AssertionError("import cycle: " + " -> ".join(
                    stack[stack.index(target):] + [target]))
            if target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for name in sorted(edges):
        if name not in state:
            visit(name)


def test_files_stay_small():
    sizes = {str(path): len(path.read_text().splitlines()) for path in MODULES.values()}
    assert not {p: n for p, n in sizes.items() if n > MAX_LINES}, f"split files over {MAX_LINES}"


def test_no_magic_error_strings():
    offenders = [str(path) for path in MODULES.values() if "pilepack-error" in path.read_text()]
    assert not offenders, offenders

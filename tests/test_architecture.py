"""The layout rules of docs/code-style.md that a test can hold: imports point one way, no import
cycles between modules, sub-packages in their order, small files, no magic error strings."""

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


# pipeline/ by stage, bottom to top: filters (pure text rules) <- config <- read <- (quality | tokenize) <- write <- dataset
# <- launch <- the commands. Each sub-package may import the ones listed (itself always).
PIPELINE_LAYERS = {
    "filters": set(),
    "config": {"filters"},
    "read": {"config", "filters"},
    "quality": {"config", "filters", "read"},
    "tokenize": {"config", "filters", "read"},
    "write": {"config", "filters", "read", "quality", "tokenize"},
    "dataset": {"config", "filters", "read", "quality", "tokenize", "write"},
    "launch": {"config", "filters", "read", "quality", "tokenize", "write", "dataset"},
}
COMMANDS = {"run", "train_tokenizer", "verify", "roundtrip", "report", "megatron_paths"}


def _layer(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if parts[0] == "pipeline" and len(parts) > 1 else None


def test_pipeline_sub_packages_point_one_way():
    wrong = []
    for name, targets in sorted(GRAPH.items()):
        layer = _layer(name)
        if layer is None or layer in COMMANDS:
            continue
        allowed = PIPELINE_LAYERS[layer] | {layer}
        wrong += [f"{name} imports {t}" for t in sorted(targets)
                  if _layer(t) is not None and _layer(t) not in allowed]
    assert not wrong, wrong


def test_no_pipeline_module_outside_a_sub_package_but_the_commands_and_config():
    top = {path.stem for path in (ROOT / "pipeline").glob("*.py")} - {"__init__"}
    assert top == COMMANDS, f"move {sorted(top - COMMANDS)} into a sub-package of pipeline/"
    packages = {path.parent.name for path in (ROOT / "pipeline").glob("*/__init__.py")}
    assert packages == set(PIPELINE_LAYERS), packages


def test_every_pipeline_sub_package_says_what_it_owns_and_may_import():
    for layer in PIPELINE_LAYERS:
        doc = ast.get_docstring(ast.parse((ROOT / "pipeline" / layer / "__init__.py").read_text()))
        assert doc and 3 <= len(doc.splitlines()) <= 6, f"pipeline/{layer}: 3-6 lines of docstring"


def test_the_built_in_sample_is_not_shipped_to_workers():
    # datagen/ (the sample, test data) is outside the installed package; only the launcher
    # imports it, inside the function that builds the sample.
    wrong = []
    for name, path in MODULES.items():
        if not name.startswith("pipeline."):
            continue
        for node in ast.parse(path.read_text()).body:  # module level only
            if isinstance(node, (ast.Import, ast.ImportFrom)) and "datagen" in ast.unparse(node):
                wrong.append(name)
    assert not wrong, wrong


# trainer/ by concern: its sub-packages, and which of them each may import (itself always).
# The flat modules beside them (the loop, checkpoints, the commands) may import any.
TRAINER_SUB_PACKAGES = {
    "model": set(),
    "distribute": set(),
    "observe": set(),
    "input": {"distribute"},
    "export": {"model"},
    "sagemaker": set(),
}


def _sub_package(name: str, package: str) -> str | None:
    parts = name.split(".")
    if parts[0] != package or len(parts) < 2:
        return None
    return parts[1] if (ROOT / package / parts[1] / "__init__.py").is_file() else None


def test_trainer_sub_packages_point_one_way():
    packages = {path.parent.name for path in (ROOT / "trainer").glob("*/__init__.py")}
    assert packages == set(TRAINER_SUB_PACKAGES), packages
    wrong = []
    for name, targets in sorted(GRAPH.items()):
        own = _sub_package(name, "trainer")
        if own is None:
            continue
        allowed = TRAINER_SUB_PACKAGES[own] | {own}
        wrong += [f"{name} imports {t}" for t in sorted(targets)
                  if _sub_package(t, "trainer") not in allowed | {None}]
    assert not wrong, wrong


def test_no_flat_module_beside_the_sub_package_that_owns_its_concern():
    # e.g. launch/dry_run_sample.py beside launch/dry_run/, trainer/sagemaker_env.py beside
    # trainer/sagemaker/: the module belongs inside the sub-package.
    wrong = []
    for package in PACKAGES:
        for init in sorted((ROOT / package).rglob("__init__.py")):
            folder = init.parent
            if folder == ROOT / package:
                continue
            prefix = folder.name + "_"
            wrong += [str(path.relative_to(ROOT)) for path in folder.parent.glob("*.py")
                      if path.stem.startswith(prefix)]
    assert not wrong, f"move into their sub-package: {wrong}"


def test_tests_mirror_the_sub_packages():
    missing = [f"pipeline/{layer}" for layer in PIPELINE_LAYERS
               if not (ROOT / "tests" / "pipeline" / layer).is_dir()]
    missing += [f"trainer/{name}" for name in TRAINER_SUB_PACKAGES
                if not (ROOT / "tests" / "trainer" / name).is_dir()]
    for init in sorted((ROOT / "pipeline").rglob("*/*/__init__.py")):  # nested: launch/dry_run
        relative = init.parent.relative_to(ROOT)
        if not (ROOT / "tests" / relative).is_dir():
            missing.append(str(relative))
    assert not missing, f"tests/ has no folder for {missing}"


# Functions a reader can hold: over MAX_FUNCTION_LINES (from `def` to the last line, docstring
# included), a function says why in a comment directly above it (or above its decorators) that
# starts with "# Long because:".
MAX_FUNCTION_LINES = 60
FUNCTION_PACKAGES = ("common", "schemas", "tokenizer", "pipeline", "trainer", "datagen")
LONG_BECAUSE = "# Long because:"
# Long functions waiting to be split, as "path: name"; remove each once it is split.
TO_SPLIT: set[str] = set()


def _comment_above(lines: list[str], line: int) -> str:
    """The block of comment lines ending just above 1-based ``line``, first line first."""
    above = line - 2
    while above >= 0 and lines[above].lstrip().startswith("#"):
        above -= 1
    return "\n".join(text.strip() for text in lines[above + 1 : line - 1])


def _long_functions() -> set[str]:
    found = set()
    for package in FUNCTION_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text()
            lines = text.splitlines()
            for node in ast.walk(ast.parse(text, filename=str(path))):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                if node.end_lineno - node.lineno + 1 <= MAX_FUNCTION_LINES:
                    continue
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if not _comment_above(lines, first).startswith(LONG_BECAUSE):
                    found.add(f"{path.relative_to(ROOT).as_posix()}: {node.name}")
    return found


def test_functions_stay_short_or_say_why():
    long = _long_functions()
    assert not long - TO_SPLIT, (
        f"over {MAX_FUNCTION_LINES} lines: split, or say why in a '{LONG_BECAUSE}' comment "
        f"directly above: {sorted(long - TO_SPLIT)}")
    assert not TO_SPLIT - long, f"split now: remove {sorted(TO_SPLIT - long)} from TO_SPLIT"


def _declares_choices(node: ast.ClassDef) -> bool:
    return any(isinstance(call, ast.Call) and any(k.arg == "choices" for k in call.keywords)
               for statement in node.body if isinstance(statement, ast.AnnAssign)
               for call in ast.walk(statement))


def _checks_choices(node: ast.ClassDef) -> bool:
    return any(isinstance(item, ast.FunctionDef) and item.name == "__post_init__"
               and "check_choices(self)" in ast.unparse(item) for item in node.body)


def test_declared_choices_are_checked_on_construction_too():
    # A field's choices are declared once, in its flag(); common.flags.check_choices, called by
    # __post_init__, holds them for a config built in code as the parser does for flags.
    wrong = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and _declares_choices(node) \
                    and not _checks_choices(node):
                wrong.append(f"{name}.{node.name}")
    assert not wrong, f"call check_choices(self) in __post_init__: {wrong}"

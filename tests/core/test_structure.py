"""The layout rules a newcomer relies on (docs/architecture.md#rules-between-rooms): `__all__` says what is public, and
no module reaches into another module's private names or its objects' private members."""

from __future__ import annotations

import ast
import subprocess
import sys
import types
from pathlib import Path

import threadline

SOURCE = Path(threadline.__file__).parent

# Private members of other projects' objects that we use on purpose, each for a reason given here; our own modules
# never appear in this list.
THIRD_PARTY_PRIVATES = {
    # llama-cpp-python has no public way to reach the loaded model's handle, nor to extend its JSON-schema grammar
    # converter (the local model's structured output builds on both).
    ("models/local/_runtime.py", "_model"),
    ("models/local/_generate.py", "_model"),
    ("models/local/_grammar.py", "_rules"),
    ("models/local/_grammar.py", "_format_literal"),
    ("models/local/_grammar.py", "_add_rule"),
    # os._exit is the standard library's documented way to end a process without waiting for its threads: a
    # draining worker ends so while the turns it handed back still run in it (their next worker must be the only
    # writer).
    ("durable/worker.py", "_exit"),
}


def modules() -> list[tuple[str, ast.Module]]:
    return [
        (path.relative_to(SOURCE).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(SOURCE.rglob("*.py"))
    ]


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def imported_module_exists(relative: str, node: ast.ImportFrom, name: str) -> bool:
    """Whether ``from <node.module> import <name>`` names a module (a private module of the package is fine: the
    rule is about names inside another module)."""
    package = (SOURCE / relative).parent
    for _ in range(node.level - 1):
        package = package.parent
    if node.level == 0:
        package = SOURCE.parent
    target = package.joinpath(*(node.module or "").split(".")) if node.module else package
    return (target / f"{name}.py").exists() or (target / name / "__init__.py").exists()


def test_no_module_imports_a_private_name_of_another_module() -> None:
    found = [
        f"{relative}:{node.lineno} imports {alias.name} from {node.module or '.'}"
        for relative, tree in modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if is_private(alias.name) and not imported_module_exists(relative, node, alias.name)
    ]
    assert found == []


def test_no_module_uses_private_members_of_another_modules_objects() -> None:
    found = []
    for relative, tree in modules():
        # Private names this module defines itself (functions, module globals, attributes it assigns).
        own: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                own.add(node.target.id)
            elif isinstance(node, ast.Assign):
                own.update(target.id for target in node.targets if isinstance(target, ast.Name))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or not is_private(node.attr) or node.attr in own:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if (relative, node.attr) not in THIRD_PARTY_PRIVATES:
                found.append(f"{relative}:{node.lineno} {ast.unparse(node)}")
    assert found == []


def test_all_lists_exactly_the_public_names() -> None:
    # In a fresh interpreter, so names that other tests loaded lazily do not count twice.
    code = (
        "import threadline, types\n"
        "names = [n for n, v in vars(threadline).items()\n"
        "         if not n.startswith('_') and not isinstance(v, types.ModuleType)]\n"
        "print(' '.join(sorted(names)))"
    )
    printed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    eager = (set(printed) - {"annotations", "TYPE_CHECKING", "Any"}) | {"__version__"}
    lazy = set(getattr(threadline, "_LAZY", {}))
    assert sorted(set(threadline.__all__)) == sorted(eager | lazy)
    assert len(threadline.__all__) == len(set(threadline.__all__))
    for name in threadline.__all__:  # every listed name resolves (lazy ones on first use)
        assert not isinstance(getattr(threadline, name), types.ModuleType), name


# The import circles that remain by design (every import counts: lazy and type-checking ones too). The log has
# none: its value types (`message_types`) import no other part of it, their field checks (`message_fields`) and JSON
# forms (`serialization`) are made of them, and `MessageList` (`message_list`) sits above both, so its `to_json`,
# `from_dict`... and `validate` reach down, never back.
ALLOWED_CIRCLES = [
    # `conversation.continuation` returns a builder that applies its deltas to that conversation.
    {"threadline.builder", "threadline.conversation.conversation"},
]


def import_graph() -> dict[str, set[str]]:
    names = {}
    for relative, _tree in modules():
        parts = relative.removesuffix(".py").split("/")
        package = parts[-1] == "__init__"
        names[".".join(["threadline", *parts[:-1]] if package else ["threadline", *parts])] = (relative, package)
    graph: dict[str, set[str]] = {name: set() for name in names}
    trees = dict(modules())
    for name, (relative, package) in names.items():
        for node in ast.walk(trees[relative]):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = name.split(".") if package else name.split(".")[:-1]
                if node.level:
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                # ``from package import module`` imports that module; ``from module import name``, the module.
                targets = [
                    f"{target}.{alias.name}" if f"{target}.{alias.name}" in names else target for alias in node.names
                ]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                while target and target not in names:
                    target = target.rpartition(".")[0]
                if target and target not in (name, "threadline"):
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_import_circles_but_the_designed_ones() -> None:
    assert sorted(map(sorted, circles(import_graph()))) == sorted(map(sorted, ALLOWED_CIRCLES))


# The size of the plan (docs/architecture.md#rooms): a module small enough to read in one sitting, and a package
# root that lists the ground floor and the log, not every part of every room.
MAX_LINES = 600
MAX_LOOSE_MODULES = 20


def test_no_module_is_over_600_lines() -> None:
    long = {
        path.relative_to(SOURCE).as_posix(): lines
        for path in sorted(SOURCE.rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, f"modules over {MAX_LINES} lines (split them along their concerns): {long}"


def test_at_most_20_loose_modules_at_the_top() -> None:
    loose = sorted(path.name for path in SOURCE.glob("*.py") if path.name not in ("__init__.py", "__main__.py"))
    assert len(loose) <= MAX_LOOSE_MODULES, (
        f"{len(loose)} modules directly in src/threadline/ (at most {MAX_LOOSE_MODULES}; put a new one in the room "
        f"it belongs to): {', '.join(loose)}"
    )

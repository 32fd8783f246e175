"""Import cycles among the modules of one Python package, read with Python's own parser (ast).

    python3 python-import-cycles.py <package dir>   ->  JSON: {"modules": N, "cycles": [[mod, ...], ...]}

An import counts wherever it stands (a function-local import still ties the two modules), except
under `if TYPE_CHECKING:`, which never runs. Each cycle is a strongly connected component of more
than one module, or a module importing itself. test/structure/structure.test.ts runs it on
sdk/python/src/svc_sdk.
"""

import ast
import json
import sys
from pathlib import Path


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name of every module of the package: svc_sdk, svc_sdk.worker, svc_sdk.sub.x."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports_of(tree: ast.AST, this: str, is_package: bool, modules: set[str]) -> set[str]:
    """The package's modules that `this` imports, by their dotted names."""
    found: set[str] = set()

    def nearest(dotted: str) -> str | None:
        # the module itself, else the package that holds the name (svc_sdk.worker.Worker -> svc_sdk.worker)
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = nearest(alias.name)
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level > 0:
                base = this if is_package else this.rpartition(".")[0]
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            for alias in node.names:
                # `from . import worker` names a module; `from .worker import Worker` a name in one.
                target = nearest(f"{source}.{alias.name}")
                if target:
                    found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    out.append(sorted(component))
    return out


def main() -> None:
    root = Path(sys.argv[1])
    files = module_names(root)
    graph = {
        name: imports_of(ast.parse(path.read_text(encoding="utf-8"), str(path)), name, path.name == "__init__.py", set(files))
        for name, path in files.items()
    }
    print(json.dumps({"modules": len(graph), "cycles": cycles(graph)}))


main()

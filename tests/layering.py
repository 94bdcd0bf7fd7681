"""The package's layers, every import read from the source, and the rules they keep.

`LAYERS` lists the layers bottom to top; a module may import from its own layer and the layers
below it, never from one above. Every import counts: at module level, inside a function (a lazy
import), inside `if TYPE_CHECKING:` and `importlib.import_module("literal")`. One exemption: an
import under `TYPE_CHECKING` (for annotations only, never run) does not make a cycle, since a
cycle is a question of what runs first; it still must not go upward. An import by a computed name
(`import_module(name)`) cannot be read from the source: the edges may use them (the CLI's lazy
subcommands), the core only where `COMPUTED_IMPORTS` says why.

    python -m tests.layering            # the problems, if any, and the drawing
    python -m tests.layering --write    # rewrite the generated part of docs/architecture.md

`tests/test_public_api.py` holds the package to these rules, and the drawing in
docs/architecture.md to the code.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "sse_inspect"
DOC = ROOT / "docs" / "architecture.md"

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("_version", "_errors", "_limits", "_events", "_fastjson", "_format", "_redact", "_linebuffer",
              "_release")),
    ("values and parsing", ("_capture", "_decoding", "_parser_accel", "_parser", "_eventstream", "_ndjson_accel",
                            "_ndjson", "_framing")),
    ("stream tools", ("_rechunk", "_faults", "dialects", "dialects.*")),
    ("secrets", ("_secrets",)),
    ("other formats and recording", ("interop", "interop.*", "recorder")),
    ("loading", ("_loading",)),
    ("analysis", ("_outcome", "_analysis", "_diff")),
    ("playback", ("_playback", "_fault_plan")),
    ("checks and report", ("checks", "checks.*", "report", "_live")),
    ("front", ("",)),
    ("edges", ("__main__", "cli", "cli.*", "mitm_addon", "mitm_view", "proxy", "fetch", "server", "live", "live_page",
               "httpx_transport", "requests_adapter", "pytest_plugin")),
)  # fmt: skip
"""Bottom to top, by module name under the package ("" is the package itself, `pkg.*` all of pkg)."""

def core_layers() -> range:
    """The indices of the core's layers in `LAYERS`: every layer up to the front door."""
    return range([name for name, _ in LAYERS].index("front") + 1)


CORE = frozenset(name for name, _ in LAYERS[: [n for n, _ in LAYERS].index("front") + 1])
"""The layers up to the front door: sans-I/O, none of them may import an edge library."""

EDGE_LIBRARIES = frozenset({
    "asyncio", "click", "concurrent", "h11", "h2", "http", "httpx", "mitmproxy", "multiprocessing", "pytest",
    "requests", "rich", "selectors", "signal", "socket", "socketserver", "ssl", "starlette", "subprocess",
    "threading", "urllib3", "uvicorn",
})  # fmt: skip
"""Top-level modules of the terminal, the proxy, the network, event loops and processes."""

ALLOWED_EDGES = {
    ("sse_inspect.interop._flows", "mitmproxy"): (
        "reads mitmproxy's flow file format with mitmproxy's own FlowReader (the format changes with its "
        "versions), imported inside the function that reads such a file: importing it loads asyncio and "
        "socket modules, but nothing is started (no proxy, no socket opened, no event loop run)"
    ),
}
"""The core's exceptions to EDGE_LIBRARIES, each with its reason."""

COMPUTED_IMPORTS = {
    "sse_inspect._decoding": (
        "zstd_module tries the zstd implementations by name in turn (compression.zstd, backports.zstd, "
        "zstandard: `_ZSTD_MODULES`), none of them an edge library"
    ),
}
"""The core modules that import a module by a computed name, each with its reason."""

RUNTIME_ALLOWED = {
    "threading": "the standard library's logging imports it (for its locks); the recorder logs, starts no thread",
}
"""Edge libraries that importing the core may load, as a dependency of the standard library."""


@dataclass(frozen=True, slots=True)
class Import:
    source: str
    target: str
    """A module of the package, or the top-level name of a module outside it."""
    line: int
    type_checking: bool = False
    computed: bool = False
    """`import_module(name)` with a name that is not a literal: `target` is "?"."""

    @property
    def internal(self) -> bool:
        return self.target == PACKAGE or self.target.startswith(PACKAGE + ".")

    def __str__(self) -> str:
        where = " (under TYPE_CHECKING)" if self.type_checking else " (by a computed name)" if self.computed else ""
        return f"{self.source} -> {self.target} (line {self.line}){where}"


def modules(root: Path = ROOT / PACKAGE) -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def read_imports(name: str, path: Path, known: Iterable[str]) -> list[Import]:
    """Every import in the module's source, wherever it stands."""
    known = set(known)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []

    def add(target: str, node: ast.AST, type_checking: bool) -> None:
        if not (target == PACKAGE or target.startswith(PACKAGE + ".")):
            target = target.split(".")[0]
        else:
            while target not in known and "." in target:  # a name imported from a module: that module
                target = target.rpartition(".")[0]
        if target != name:
            found.append(Import(name, target, getattr(node, "lineno", 0), type_checking))

    def visit(node: ast.AST, type_checking: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, type_checking)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node, type_checking)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            for alias in node.names:  # `from . import _render`: the module _render, if it is one
                full = f"{module}.{alias.name}"
                add(full if full in known else module, node, type_checking)
        elif isinstance(node, ast.Call) and _is_import_call(node.func):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                add(node.args[0].value, node, type_checking)
            else:
                found.append(Import(name, "?", getattr(node, "lineno", 0), type_checking, computed=True))
        for inner in ast.iter_child_nodes(node):
            visit(inner, type_checking)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_import_call(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "__import__") or (
        isinstance(func, ast.Attribute) and func.attr == "import_module"
    )


def graph(root: Path = ROOT / PACKAGE) -> dict[str, list[Import]]:
    """Every module of the package and its imports."""
    found = modules(root)
    return {name: read_imports(name, path, found) for name, path in found.items()}


def layer_of(module: str, layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS) -> int | None:
    """The index of the module's layer in `layers`, or None when no layer names it."""
    local = module[len(PACKAGE) + 1 :] if module != PACKAGE else ""
    for index, (_, patterns) in enumerate(layers):
        for pattern in patterns:
            if local == pattern or (pattern.endswith(".*") and local.startswith(pattern[:-1])):
                return index
    return None


def problems(
    imports: dict[str, list[Import]], layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS
) -> list[str]:
    """What breaks the rules: a module in no layer, an import upward, an edge library in the core, a cycle."""
    out = []
    names = [name for name, _ in layers]
    core = {names.index(name) for name in CORE if name in names}
    for module in sorted(imports):
        if layer_of(module, layers) is None:
            out.append(f"{module} is in no layer: add it to LAYERS in tests/layering.py")
    for module in sorted(imports):
        mine = layer_of(module, layers)
        if mine is None:
            continue
        for imp in imports[module]:
            if imp.internal:
                theirs = layer_of(imp.target, layers)
                if theirs is not None and theirs > mine:
                    out.append(f"upward import: {imp} ({names[mine]} imports {names[theirs]})")
            elif mine in core and imp.target in EDGE_LIBRARIES and (module, imp.target) not in ALLOWED_EDGES:
                out.append(f"the core imports an edge: {imp}")
            elif mine in core and imp.computed and module not in COMPUTED_IMPORTS:
                out.append(f"the core imports by a computed name, unchecked: {imp} (say why in COMPUTED_IMPORTS)")
    run_time = {m: [i.target for i in imps if i.internal and not i.type_checking] for m, imps in imports.items()}
    for cycle in cycles(run_time):
        out.append("import cycle: " + " -> ".join([*cycle, cycle[0]]))
    return out


def cycles(edges: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (or one importing itself), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, ()):
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges) + 100))
    try:
        for v in sorted(edges):
            if v not in index:
                connect(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


# -- the drawing ---------------------------------------------------------------------------


def _node(module: str) -> str:
    """Subpackages are drawn as one box (`dialects`, not each dialect)."""
    local = module[len(PACKAGE) + 1 :] if module != PACKAGE else PACKAGE
    return local.split(".")[0]


def drawing(imports: dict[str, list[Import]]) -> str:
    """A Mermaid graph of the imports between the package's modules, a box per layer: an arrow from a
    module to one it imports.

    Subpackages are one node; an arrow is left out when a longer path leads there too (a
    transitive reduction), so what is drawn is the skeleton of the layering."""
    edges: dict[str, set[str]] = {}
    for module, imps in imports.items():
        node = _node(module)
        edges.setdefault(node, set())
        for imp in imps:
            if imp.internal and not imp.type_checking and _node(imp.target) != node:
                edges[node].add(_node(imp.target))
    reduced = {a: {b for b in targets if not _reaches_otherwise(edges, a, b)} for a, targets in edges.items()}
    lines = ["```mermaid", "flowchart TB"]
    for index, (name, _) in enumerate(LAYERS):
        members = sorted({_node(m) for m in imports if layer_of(m) == index})
        lines.append(f'    subgraph L{index}["{index}. {name}"]')
        lines += [f'        {_id(m)}["{m}"]' for m in members]
        lines.append("    end")
    for a in sorted(reduced):
        lines += [f"    {_id(a)} --> {_id(b)}" for b in sorted(reduced[a])]
    lines.append("```")
    return "\n".join(lines)


def _id(node: str) -> str:
    return "m" + node.strip("_") if node != PACKAGE else "front"


def _reaches_otherwise(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    """Whether `goal` can be reached from `start` other than by the arrow start -> goal."""
    seen = set()
    todo = [b for b in edges.get(start, ()) if b != goal]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(edges.get(node, ()))
    return False


def module_table(root: Path = ROOT / PACKAGE) -> str:
    """One line per module: its layer and the first sentence of its docstring."""
    rows = ["| layer | module | what it holds |", "| --- | --- | --- |"]
    found = modules(root)
    for module in sorted(found, key=lambda m: (layer_of(m) if layer_of(m) is not None else 99, m)):
        layer = layer_of(module)
        doc = ast.get_docstring(ast.parse(found[module].read_text(encoding="utf-8"))) or ""
        paragraph = " ".join(doc.strip().split("\n\n")[0].split())
        first = paragraph.split(". ")[0].replace("|", "\\|")
        rows.append(f"| {layer if layer is not None else '?'} | `{module}` | {first} |")
    return "\n".join(rows)


BEGIN, END = "<!-- generated by `python -m tests.layering --write`: begin -->", "<!-- generated: end -->"


def generated() -> str:
    """The generated part of docs/architecture.md."""
    return f"{BEGIN}\n{drawing(graph())}\n\n{module_table()}\n{END}"


def documented(text: str) -> str:
    """The generated part as it stands in `text`."""
    start, end = text.find(BEGIN), text.find(END)
    return text[start : end + len(END)] if 0 <= start < end else ""


def main(argv: list[str]) -> int:
    if "--write" in argv:
        text = DOC.read_text(encoding="utf-8")
        old = documented(text)
        if not old:
            print(f"{DOC}: no generated part to replace (the {BEGIN!r} ... {END!r} markers)", file=sys.stderr)
            return 1
        DOC.write_text(text.replace(old, generated()), encoding="utf-8")
        return 0
    found = problems(graph())
    for problem in found:
        print(problem)
    if not found:
        print(generated())
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

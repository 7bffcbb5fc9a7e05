"""The package layout of issue 15: one package per method, no flat helper modules, no import cycles."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path

import assay
import assay.methods

SRC = Path(assay.__file__).parent
PACKAGES = {"geval": "GEval", "checkeval": "CheckEval", "seal": "Seal", "gereval": "GerEval"}


def _top_level_imports(tree: ast.Module) -> set[str]:
    """Modules imported when the module itself runs: the module body and its ``if`` blocks (TYPE_CHECKING
    included, since a type checker follows them), not function bodies, which import lazily."""
    found: set[str] = set()
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, (ast.If, ast.Try)):
            stack.extend(node.body + node.orelse + getattr(node, "finalbody", []))
    return found


def _import_graph() -> dict[str, set[str]]:
    modules = {}
    for file in SRC.rglob("*.py"):
        parts = file.relative_to(SRC.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    return {name: {m for m in _top_level_imports(ast.parse(file.read_text(encoding="utf-8")))
                   if m in modules and m != name}
            for name, file in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_each_method_is_a_package_that_exports_only_its_class():
    for name, cls in PACKAGES.items():
        module = importlib.import_module(f"assay.methods.{name}")
        assert hasattr(module, "__path__"), f"assay.methods.{name} is not a package"
        public = {n for n in vars(module) if not n.startswith("_")} - {"method", "annotations"}
        submodules = {m.name for m in pkgutil.iter_modules(module.__path__)}
        assert public - submodules == {cls}
        assert getattr(module, cls) is assay.methods.get_method(name)


def test_no_flat_helper_modules_are_left():
    flat = sorted(m.name for m in pkgutil.iter_modules(assay.methods.__path__)
                  if m.name.startswith(("seal_", "geval_", "checkeval_", "gereval_")))
    assert flat == []
    assert importlib.util.find_spec("assay.rubrics") is None
    assert not (SRC / "artifacts").exists()  # method artifacts live beside their code (issue 15)


def test_no_module_imports_itself_back_when_it_loads():
    assert _cycles(_import_graph()) == []


def test_the_cli_and_api_take_judge_and_method_names_from_the_registries():
    from assay.judges import DEFAULT_JUDGE

    for file in [*sorted((SRC / "cli").glob("*.py")), SRC / "api.py"]:
        text = file.read_text(encoding="utf-8")
        assert DEFAULT_JUDGE not in text, f"{file.name} spells out the default judge: use assay.judges.DEFAULT_JUDGE"
        for listing in ("direct, geval", "``direct``, ``geval``", "openai:MODEL, openai:MODEL@URL, replay"):
            assert listing not in text.replace('"', ""), f"{file.name} lists names the registries hold: {listing!r}"


def test_methods_keep_no_table_keyed_by_dataset_names():
    """A method finds its artifact for a dataset through the dataset's card (issue 15), never a dict of its own."""
    from assay.datasets import list_datasets

    names = {info.name for info in list_datasets()}
    tables = []
    for file in (SRC / "methods").rglob("*.py"):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
                if keys & names:
                    tables.append(f"{file.relative_to(SRC)}:{node.lineno}")
    assert tables == []


#: The only places that may call a judge's ``generate``: the one call path, the middleware calling the backend,
#: and ``Judge.check``'s probe (backends' own definitions are ``def generate(``, which the pattern leaves out);
#: below the path, the batch backend retrying a failed line live through the backend it wraps, and the Ray
#: actor's managed judge (a middleware subclass) handing on to the middleware.
GENERATE_ALLOWED = {("judges/ask.py", "judge.generate("), ("judges/middleware.py", "self.inner.generate("),
                    ("judges/base.py", "self.generate("), ("judges/batch.py", "self.live.generate("),
                    ("run/ray_executor.py", "super().generate(")}


def generate_calls(root: Path) -> list[tuple[str, int, str]]:
    """Every ``.generate(`` call under ``root``: (path relative to it, line number, the call's receiver)."""
    found = []
    for file in sorted(root.rglob("*.py")):
        for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
            for m in re.finditer(r"([\w.\]\)(]*)\.generate\(", line):
                found.append((file.relative_to(root).as_posix(), n, f"{m.group(1)}.generate("))
    return found


def test_every_judge_call_goes_through_the_one_call_path():
    stray = [f"{path}:{n}: {call}" for path, n, call in generate_calls(SRC)
             if not any(path == p and call.endswith(c) for p, c in GENERATE_ALLOWED)]
    assert not stray, "judge calls outside assay.judges.ask.ask (use ask(judge, request, ...)):\n" + "\n".join(stray)


def test_the_generate_scan_finds_a_direct_call(tmp_path):
    (tmp_path / "m.py").write_text("async def f(ctx, r):\n    return await ctx.judge.generate(r, stage='x')\n")
    assert generate_calls(tmp_path) == [("m.py", 2, "ctx.judge.generate(")]

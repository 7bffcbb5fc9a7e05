"""The package layout (issues 15 and 24): one package per method, packages by subsystem with only the public
surface flat at the top, no flat helper modules, no import cycles between modules or packages, no private names
imported across modules."""

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


def _modules(root: Path) -> dict[str, Path]:
    """Every module under the package directory ``root``, by dotted name (a package by its ``__init__``)."""
    modules = {}
    for file in root.rglob("*.py"):
        parts = file.relative_to(root.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    return modules


def _import_graph(root: Path = SRC) -> dict[str, set[str]]:
    modules = _modules(root)
    return {name: {m for m in _top_level_imports(ast.parse(file.read_text(encoding="utf-8")))
                   if m in modules and m != name}
            for name, file in modules.items()}


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded onto the subsystems (``assay.judges``, ``assay.run``, ..., and the flat modules):
    an edge where a module of one imports a module of another."""
    def subsystem(module: str) -> str:
        return ".".join(module.split(".")[:2])

    folded: dict[str, set[str]] = {}
    for module, imported in graph.items():
        folded.setdefault(subsystem(module), set()).update(
            subsystem(m) for m in imported if subsystem(m) != subsystem(module))
    for targets in list(folded.values()):
        for t in targets:
            folded.setdefault(t, set())
    return folded


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


def method_helpers(root: Path) -> list[str]:
    """Modules and packages anywhere under ``root`` named after a method (``geval_steps.py``): a method's helper
    outside its package."""
    prefixes = tuple(f"{name}_" for name in PACKAGES)
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if (p.suffix == ".py" or p.is_dir()) and p.stem.startswith(prefixes))


def test_no_flat_helper_modules_are_left():
    assert method_helpers(SRC) == []
    assert importlib.util.find_spec("assay.rubrics") is None
    assert not (SRC / "artifacts").exists()  # method artifacts live beside their code (issue 15)


def test_no_module_imports_itself_back_when_it_loads():
    assert _cycles(_import_graph()) == []


def test_no_subsystem_imports_itself_back_through_another():
    """Packages form layers (the judges below the methods below the run below the API), so no package's module
    imports a package that imports it back, even where no single module does (once: ``judges`` <-> ``tokens``)."""
    assert _cycles(package_graph(_import_graph())) == []


def test_the_package_cycle_check_finds_one_no_module_cycle_shows(tmp_path):
    for path, text in {"a/__init__.py": "", "a/x.py": "import assay.b.y\n", "a/w.py": "",
                       "b/__init__.py": "", "b/y.py": "", "b/z.py": "from assay.a import w\n"}.items():
        (tmp_path / "assay" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "assay" / path).write_text(text)
    graph = _import_graph(tmp_path / "assay")
    assert _cycles(graph) == []
    assert _cycles(package_graph(graph)) == [["assay.a", "assay.b"]]


#: Modules that may sit flat at the top of the package: the public surface and the version.
FLAT_ALLOWED = {"__init__", "api", "errors", "types", "_version"}


def flat_modules(root: Path) -> set[str]:
    """The modules directly in the package directory ``root`` (not in a subpackage)."""
    return {f.stem for f in root.glob("*.py")}


def test_only_the_public_surface_is_flat_at_the_top():
    assert flat_modules(SRC) - FLAT_ALLOWED == set(), "put a new module in the package of its subsystem"


def test_the_flat_module_check_finds_a_stray_module(tmp_path):
    for name in ("__init__", "api", "store"):
        (tmp_path / f"{name}.py").write_text("")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "executor.py").write_text("")
    assert flat_modules(tmp_path) - FLAT_ALLOWED == {"store"}


#: Private names imported from another module, each with the issue that removes it. ``probe/run.py`` asks the
#: judge's capabilities through the API's private step until the run session (issue 24) offers it.
PRIVATE_ALLOWED: set[tuple[str, str, str]] = set()


def private_imports(root: Path) -> list[tuple[str, str, str]]:
    """(importing module, module, name) for each ``_name`` imported from another module, lazy imports included
    (dunder names such as ``__version__`` are public)."""
    found = []
    for module, file in sorted(_modules(root).items()):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module != module:
                found += [(module, node.module, a.name) for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_no_private_name_is_imported_from_another_module():
    stray = [f"{m} imports {n} from {src}" for m, src, n in private_imports(SRC) if (m, src, n) not in PRIVATE_ALLOWED]
    assert not stray, "make what is shared public in the module it belongs to:\n" + "\n".join(stray)


def test_the_private_import_scan_finds_a_private_name(tmp_path):
    (tmp_path / "assay" / "cli").mkdir(parents=True)
    (tmp_path / "assay" / "cli" / "main.py").write_text("def _table(): ...\n")
    (tmp_path / "assay" / "cli" / "other.py").write_text(
        "from assay._version import __version__\n\ndef f():\n    from assay.cli.main import _table\n")
    assert private_imports(tmp_path / "assay") == [("assay.cli.other", "assay.cli.main", "_table")]


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


def test_the_helper_check_finds_a_method_helper_outside_its_package(tmp_path):
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "seal_spec.py").write_text("")
    (tmp_path / "cli" / "rubric.py").write_text("")
    (tmp_path / "methods" / "geval_steps").mkdir(parents=True)
    assert method_helpers(tmp_path) == ["cli/seal_spec.py", "methods/geval_steps"]


def test_every_judge_call_goes_through_the_one_call_path():
    stray = [f"{path}:{n}: {call}" for path, n, call in generate_calls(SRC)
             if not any(path == p and call.endswith(c) for p, c in GENERATE_ALLOWED)]
    assert not stray, "judge calls outside assay.judges.ask.ask (use ask(judge, request, ...)):\n" + "\n".join(stray)


def test_the_generate_scan_finds_a_direct_call(tmp_path):
    (tmp_path / "m.py").write_text("async def f(ctx, r):\n    return await ctx.judge.generate(r, stage='x')\n")
    assert generate_calls(tmp_path) == [("m.py", 2, "ctx.judge.generate(")]


#: The commands a method may have of its own (``assay geval steps``, ``assay checklist``, ``assay rubric``).
METHOD_COMMANDS = {"cli/geval.py", "cli/checklist.py", "cli/rubric.py"}


def method_names_outside_methods(root: Path, names: set[str]) -> list[str]:
    """Method names that code outside ``methods/`` switches on: compared with (``method == "geval"``, ``in``) or
    listed in a tuple, list or set (``RATIO_METHODS = ("checkeval", "seal")``). Each is a place that knows a method
    by name instead of asking the method (a hook on ``Method``). A report key that happens to be a method's name
    (``res["pairwise"]``) switches on nothing and is not counted."""
    found = []
    for file in sorted(root.rglob("*.py")):
        rel = file.relative_to(root).as_posix()
        if rel.startswith("methods/") or rel in METHOD_COMMANDS:
            continue
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                values = [node.left, *node.comparators]
            elif isinstance(node, ast.Tuple | ast.List | ast.Set):
                values = list(node.elts)
            else:
                continue
            found += [f"{rel}:{v.lineno}: {v.value!r}" for v in values
                      if isinstance(v, ast.Constant) and v.value in names]
    return found


def test_no_code_outside_methods_names_a_method():
    """A plugin method gets every feature only if nothing outside ``methods/`` switches on a method's name."""
    from assay.methods import _BUILTIN

    assert method_names_outside_methods(SRC, set(_BUILTIN)) == []


def test_the_method_name_scan_finds_a_switch(tmp_path):
    (tmp_path / "probe.py").write_text('"""Mentions geval in prose."""\nif method == "geval":\n    pass\n'
                                       'RATIO = ("seal", "x")\nout["geval"] = 1\n')
    (tmp_path / "methods").mkdir()
    (tmp_path / "methods" / "x.py").write_text('NAMES = ("geval", "seal")\n')
    assert method_names_outside_methods(tmp_path, {"geval", "seal"}) == ["probe.py:2: 'geval'", "probe.py:4: 'seal'"]

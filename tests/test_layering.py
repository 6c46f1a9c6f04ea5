"""The package's structure: no import cycle between its modules (imports inside functions count
too: a cycle held apart by a late import is still a cycle), and the layers import only downward."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "deepcfr"
# lower layers must not import these: games -> checkpoints -> cfr -> parallel -> train -> search ->
# players -> improve -> exploit -> play / serve / cli (evaluate -> games beside cfr; fitted, the
# fitted value function and hand belief, above cfr and evaluate beside parallel and train; report and the
# small modules at the bottom, the player spec grammar among them; bench, the benchmarks, at the top
# beside cli, which alone imports it). No row has an exception.
EVERYTHING = (
    "games",
    "checkpoints",
    "cfr",
    "parallel",
    "evaluate",
    "fitted",
    "train",
    "search",
    "players",
    "improve",
    "exploit",
    "play",
    "report",
    "serve",
    "bench",
    "cli",
)
FORBIDDEN = {
    "games": (
        "checkpoints",
        "cfr",
        "parallel",
        "fitted",
        "train",
        "evaluate",
        "search",
        "players",
        "improve",
        "exploit",
        "cli",
        "serve",
        "play",
        "report",
        "bench",
    ),
    "cfr": (
        "parallel",
        "fitted",
        "train",
        "search",
        "players",
        "improve",
        "exploit",
        "cli",
        "serve",
        "play",
        "report",
        "bench",
    ),
    "parallel": (
        "fitted",
        "train",
        "search",
        "players",
        "improve",
        "exploit",
        "cli",
        "serve",
        "play",
        "report",
        "bench",
    ),
    "evaluate": (
        "checkpoints",
        "cfr",
        "parallel",
        "fitted",
        "train",
        "search",
        "players",
        "improve",
        "exploit",
        "cli",
        "serve",
        "play",
        "report",
        "bench",
    ),
    # the fitted artefacts read games, cfr's network, checkpoints and evaluate's arena only
    "fitted": (
        "parallel",
        "train",
        "search",
        "players",
        "improve",
        "exploit",
        "cli",
        "serve",
        "play",
        "report",
        "bench",
    ),
    # fitted artefacts are for players, search and evaluation; the Trainer fits none of them
    "train": ("fitted", "search", "players", "improve", "exploit", "cli", "serve", "play", "bench"),
    "search": ("players", "improve", "exploit", "cli", "serve", "play", "bench"),
    "players": ("improve", "exploit", "cli", "serve", "play", "bench"),
    "improve": ("exploit", "cli", "serve", "play", "bench"),
    # the learned exploiter (issue 36, piece 3) runs improve's machinery: exploit sits above improve
    "exploit": ("cli", "serve", "play", "bench"),
    "play": ("improve", "exploit", "cli", "serve", "bench"),
    "serve": ("improve", "exploit", "cli", "bench"),
    # the one owner of the checkpoint format, below every layer that saves or loads a network
    "checkpoints": tuple(layer for layer in EVERYTHING if layer != "games"),
    "report": (
        "checkpoints",
        "cfr",
        "parallel",
        "fitted",
        "train",
        "search",
        "players",
        "improve",
        "exploit",
        "cli",
        "serve",
        "play",
        "bench",
    ),
    # the benchmarks measure the layers below them (engine, forward pass, trainer, search) and run
    # from cli alone
    "bench": ("players", "improve", "exploit", "cli", "serve", "play"),
    # the bottom: modules that every layer may use and that use none
    "seeding": EVERYTHING,
    "devices": EVERYTHING,
    "atomic": EVERYTHING,
    "player_specs": EVERYTHING,  # plain text: the configs of train and improve check the specs they hold
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package modules ``name`` imports (absolute or relative, at any depth of the file)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            targets = [prefix] + [f"{prefix}.{a.name}" for a in node.names]
        else:
            continue
        for target in targets:
            # the deepest package module the import names (a submodule, or the module of a name)
            while target and target not in known:
                target = target.rsplit(".", 1)[0] if "." in target else ""
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(name, path, known) for name, path in mods.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
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
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_the_checker_sees_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    g = graph()
    # package __init__ files re-export their modules: an edge from a module to its own package's
    # __init__ is not a cycle of the code's structure, so those edges are left out
    g = {m: {t for t in targets if not m.startswith(t + ".")} for m, targets in g.items()}
    assert cycles(g) == []


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layers_import_only_downward(layer):
    bad = []
    for name, targets in graph().items():
        if name == f"deepcfr.{layer}" or name.startswith(f"deepcfr.{layer}."):
            for target in targets:
                top = target.split(".")[1] if target.count(".") >= 1 else ""
                if top in FORBIDDEN[layer]:
                    bad.append(f"{name} -> {target}")
    assert bad == []


def test_every_row_names_a_part_of_the_package():
    names = set(modules())
    assert [layer for layer in FORBIDDEN if f"deepcfr.{layer}" not in names] == []


def test_training_needs_no_web_framework():
    """``deepcfr train`` ends by printing how to play the run, from the page's presentation
    helpers; on a machine without FastAPI (the lent GPU machines) that must not import the app
    (a GPU run failed at its last line so)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "for name in ('fastapi', 'starlette', 'uvicorn'): sys.modules[name] = None  # import raises\n"
        "from deepcfr.cli.train_cmd import next_steps\n"
        "from deepcfr.games.registry import make_game\n"
        "print('\\n'.join(next_steps(make_game('lost_cities'), 'run/latest.pt', 'run')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "deepcfr play --checkpoint run/latest.pt" in proc.stdout

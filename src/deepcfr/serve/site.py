"""`deepcfr build-web DIR`: the page as a static site that plays a network in the browser, with no
server: any static host (or ``python -m http.server``) serves it, and it makes no request outside
its own folder.

The site is the served page (static/index.html, app.js, style.css: the same board, turns, keys,
rules dialog and end-of-game scoring) with two more scripts: ``lost_cities.js``, the rules, the
observation and the features in JavaScript (equal to the Python engines; tests/test_web_site.py
checks them on recorded games), and ``offline.js``, which answers the page's API calls in the page
(the network through onnxruntime-web). Layout of DIR::

    index.html  app.js  style.css  lost_cities.js  offline.js
    model/PLAYER.onnx   the network (players/export.py), with the rules and encoding in its metadata
    model/site.json     what offline.js needs: rules, encoding version, names, the record format
    vendor/             onnxruntime-web's WebAssembly runtime (third_party/onnxruntime-web) and its LICENSE
    LICENSES.txt        what is shipped under which terms
"""

from __future__ import annotations

import hashlib
import json
import shutil
from importlib import resources
from pathlib import Path

from .present import check_web_table_game

ONNXRUNTIME_WEB_VERSION = "1.31.1"
RUNTIME_FILES = ("ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm")
SITE_MARKER = ".deepcfr-site"  # a folder holding this was built here: a rebuild may replace it
PAGE_FILES = ("app.js", "style.css")
SCRIPT_FILES = ("lost_cities.js", "offline.js")


class SiteError(ValueError):
    """A site that cannot be built (the message says why and what to do)."""


def vendored_runtime() -> Path | None:
    """The repository's copy of onnxruntime-web (third_party/onnxruntime-web), when this is a checkout."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "third_party" / "onnxruntime-web"
        if (candidate / "SHA256SUMS").is_file():
            return candidate
    return None


def check_runtime(folder: Path) -> dict[str, str]:
    """The runtime files of ``folder`` with their sha256, each checked against its SHA256SUMS."""
    sums_file = folder / "SHA256SUMS"
    if not sums_file.is_file():
        raise SiteError(
            f"{folder} holds no SHA256SUMS: not a copy of onnxruntime-web {ONNXRUNTIME_WEB_VERSION} "
            "as third_party/onnxruntime-web has it"
        )
    expected = {
        name: digest for digest, name in (line.split() for line in sums_file.read_text().splitlines() if line.strip())
    }
    out = {}
    for name in RUNTIME_FILES + ("LICENSE",):
        path = folder / name
        if not path.is_file():
            raise SiteError(f"onnxruntime-web in {folder} lacks {name}")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if name in expected and digest != expected[name]:
            raise SiteError(f"{folder / name} does not match its SHA256SUMS (damaged or another version)")
        out[name] = digest
    return out


def _index_html(static: Path) -> str:
    html = (static / "index.html").read_text(encoding="utf-8")
    # relative paths (the site may live in any folder of a host); the engine and the offline API
    # before the page's script, which finds them at its start
    html = html.replace('href="/static/style.css"', 'href="style.css"')
    scripts = (
        '<script src="lost_cities.js"></script>\n<script src="offline.js"></script>\n<script src="app.js"></script>'
    )
    if '<script src="/static/app.js"></script>' not in html or "<body>" not in html:
        raise SiteError("static/index.html has changed: build-web cannot find its script tag and body")
    html = html.replace('<script src="/static/app.js"></script>', scripts)
    html = html.replace("<body>", '<body class="offline">', 1)
    html = html.replace(
        "<title>deepcfr: Lost Cities</title>", "<title>deepcfr: Lost Cities against the champion network</title>"
    )
    return html


def build_site(
    out: str | Path, player: str = "champion", runtime: str | Path | None = None, force: bool = False
) -> dict:
    """Build the static site into ``out`` (a new or empty folder, or one built before); returns what
    was written: files with their sizes, the total, the player and the runtime version."""
    from ..evaluate.replay import FORMAT_VERSION
    from ..players import load_player, parse_player
    from ..players.export import ONNX_MISSING, export_onnx, onnx_available

    if not onnx_available():
        raise SiteError(ONNX_MISSING)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise SiteError(f"{out} is a file: build-web writes a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / SITE_MARKER).is_file() and not force:
        raise SiteError(f"{out} is not empty and holds no site built here: choose a new folder (or --force)")
    folder = Path(runtime) if runtime is not None else vendored_runtime()
    if folder is None:
        raise SiteError(
            "no copy of onnxruntime-web: this install has no third_party/onnxruntime-web (a pip install "
            f"from PyPI does not carry it); unpack `npm pack onnxruntime-web@{ONNXRUNTIME_WEB_VERSION}` "
            "and pass --onnxruntime-web FOLDER (the third_party/onnxruntime-web of a checkout, "
            "with its SHA256SUMS and LICENSE)"
        )
    runtime_sums = check_runtime(folder)
    spec = parse_player(player)
    if spec.kind != "checkpoint":
        raise SiteError(
            f"the site plays one network in the browser: {player!r} is a {spec.kind}, not a checkpoint "
            "or the champion (a search or a bot needs `deepcfr serve`)"
        )
    checkpoint = spec.path
    if checkpoint is None:  # parse_player gives every checkpoint spec its path
        raise SiteError(f"{player!r} names no checkpoint file")
    built = load_player(spec)
    check_web_table_game(built.game, f"player {player}'s game")

    if out.is_dir():
        shutil.rmtree(out)
    (out / "model").mkdir(parents=True)
    (out / "vendor").mkdir()
    model_name = "champion.onnx" if spec.is_champion else "network.onnx"
    meta = export_onnx(spec, out / "model" / model_name)
    game = built.game
    label = "champion network" if spec.is_champion else f"network of {Path(checkpoint).name}"
    site = {
        "model": model_name,
        "player": str(spec),
        "player_label": label,
        "game": game.name,
        "game_version": game.version,
        "record_format": FORMAT_VERSION,
        "rules": game.config_dict(),
        "variant": meta["deepcfr.variant"] or "custom",
        "encoding_version": int(meta["deepcfr.encoding_version"]),
        "feature_size": game.feature_size,
        "num_actions": game.num_actions,
        "source_sha256": meta.get("deepcfr.source_sha256"),
        "onnxruntime_web": ONNXRUNTIME_WEB_VERSION,
    }
    (out / "model" / "site.json").write_text(json.dumps(site, indent=1) + "\n")
    static = resources.files("deepcfr.serve") / "static"
    scripts = resources.files("deepcfr.serve") / "web"
    (out / "index.html").write_text(_index_html(Path(str(static))), encoding="utf-8")
    for name in PAGE_FILES:
        (out / name).write_bytes((static / name).read_bytes())
    for name in SCRIPT_FILES:
        (out / name).write_bytes((scripts / name).read_bytes())
    for name in RUNTIME_FILES + ("LICENSE",):
        shutil.copyfile(folder / name, out / "vendor" / name)
    (out / "LICENSES.txt").write_text(
        "This site: the deepcfr page (index.html, app.js, style.css, lost_cities.js, offline.js) and the network in "
        f"model/ ({site['player']}), as the deepcfr package ships them.\n"
        f"vendor/: onnxruntime-web {ONNXRUNTIME_WEB_VERSION} (Copyright (c) Microsoft Corporation), MIT licence: "
        "vendor/LICENSE.\n"
    )
    (out / SITE_MARKER).write_text(json.dumps({"player": str(spec), "runtime": runtime_sums}) + "\n")
    files = {p.relative_to(out).as_posix(): p.stat().st_size for p in sorted(out.rglob("*")) if p.is_file()}
    return {
        "site": str(out),
        "player": str(spec),
        "files": files,
        "total_bytes": sum(files.values()),
        "onnxruntime_web": ONNXRUNTIME_WEB_VERSION,
    }


__all__ = ["build_site", "check_runtime", "vendored_runtime", "SiteError", "ONNXRUNTIME_WEB_VERSION", "RUNTIME_FILES"]

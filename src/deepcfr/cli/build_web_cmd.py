"""`deepcfr build-web DIR`: a static site where a person plays the champion network in the browser (serve/site.py)."""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "build-web",
        help="build a static site that plays the champion network in the browser, with no server",
        description="Builds a folder that any static host serves (or `python -m http.server -d DIR`): the "
        "page of `deepcfr serve` (the same board, keys, rules and scoring) playing a network exported to ONNX "
        "(`deepcfr export`) in the browser through onnxruntime-web, copied from third_party/onnxruntime-web "
        "with its licence. It works offline: it requests nothing outside its folder. Needs the optional "
        "packages onnx and onnxruntime.",
    )
    p.add_argument("dir", metavar="DIR", help="the folder to write (new, empty, or a site built before)")
    p.add_argument(
        "--player",
        default="champion",
        metavar="SPEC",
        help="the network to play: champion (default) or a Lost Cities checkpoint PATH (its average policy, greedy)",
    )
    p.add_argument(
        "--onnxruntime-web",
        default=None,
        metavar="FOLDER",
        help="a copy of onnxruntime-web laid out as third_party/onnxruntime-web (default: the checkout's)",
    )
    p.add_argument("--force", action="store_true", help="replace DIR even if it holds something else")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object (the files and sizes)")
    p.set_defaults(func=run)


def run(args) -> int:
    import json

    from ..serve.site import build_site

    result = build_site(args.dir, args.player, args.onnxruntime_web, args.force)
    if args.json:
        print(json.dumps(result))
    else:
        mb = result["total_bytes"] / 1e6
        print(
            f"built {result['site']}: {len(result['files'])} files, {mb:.1f} MB; {result['player']} on "
            f"onnxruntime-web {result['onnxruntime_web']}"
        )
        print(f"host it as static files, e.g. python -m http.server --directory {result['site']} 8000")
    return 0

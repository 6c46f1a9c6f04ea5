"""`deepcfr export --onnx OUT --player SPEC`: a player's network as an ONNX file (players/export.py)."""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "export",
        help="write a player's network as an ONNX file (for other stacks and the browser)",
        description="Writes the one network a player plays (the champion, a checkpoint's average policy, a "
        "distilled network) as an ONNX file: inputs features [batch, F] float32 (the game's encoding, its "
        "version in the metadata) and legal_mask [batch, A] bool; outputs logits and probabilities (the masked "
        "softmax). The rules, the encoding version and the action names are in the file's metadata. A bot, a "
        "search or a checkpoint's current policy is not one network and is refused. Needs the optional "
        "packages onnx and onnxruntime (pip install 'deepcfr[onnx]').",
    )
    p.add_argument("--onnx", required=True, metavar="OUT", help="the ONNX file to write")
    p.add_argument(
        "--player",
        default="champion",
        metavar="SPEC",
        help="the player whose network to export: champion (default), a checkpoint PATH (its average "
        "policy; @greedy is the same network)",
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object (the metadata written)")
    p.set_defaults(func=run)


def run(args) -> int:
    import json

    from ..players.export import export_onnx

    try:
        meta = export_onnx(args.player, args.onnx)
    except ImportError as e:
        raise ValueError(str(e)) from None
    if args.json:
        print(json.dumps({"onnx": args.onnx, **meta}))
    else:
        print(
            f"wrote {args.onnx}: {meta['deepcfr.player']} for {meta['deepcfr.game']} "
            f"({meta['deepcfr.variant'] or 'custom rules'}), "
            f"encoding version {meta['deepcfr.encoding_version'] or '-'}, "
            f"{meta['deepcfr.feature_size']} features -> {meta['deepcfr.num_actions']} actions"
        )
    return 0

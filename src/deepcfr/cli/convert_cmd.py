"""`deepcfr convert-checkpoint PATH --trust [--out OUT]`: a checkpoint of an older deepcfr that
holds Python objects rewritten as tensors and plain data (checkpoints.convert_checkpoint)."""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "convert-checkpoint",
        help="rewrite an older checkpoint that holds Python objects as tensors and plain data (once)",
        description="deepcfr reads every checkpoint with torch.load(weights_only=True): tensors and plain data "
        "only, so that loading a file never runs code from it. A file written by an older deepcfr that holds other "
        "objects (numpy arrays, paths, config objects) is refused; this command reads it the old way, which "
        "unpickles it and can run any code it holds, and writes it in the plain form. Run it only on files you "
        "made yourself: it refuses to read without --trust.",
    )
    p.add_argument("checkpoint", metavar="PATH", help="the checkpoint to convert")
    p.add_argument("--out", metavar="OUT", default=None, help="where to write it (default: replace PATH)")
    p.add_argument(
        "--trust", action="store_true", help="confirm that you made PATH yourself: reading it may run code it holds"
    )
    p.set_defaults(func=run)


def run(args) -> int:
    from ..checkpoints import convert_checkpoint

    out = convert_checkpoint(args.checkpoint, args.out, trust=args.trust)
    print(f"wrote {out}: it loads with weights_only=True")
    return 0

"""`deepcfr serve`: the web page for playing, watching, replaying and inspecting runs."""

from __future__ import annotations

import sys

LOCAL_HOSTS = ("127.0.0.1", "::1", "localhost")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "serve",
        help="play, watch and inspect in the browser",
        description="Start the web server and print its URL. Play Lost Cities against any player (a bot, a "
        "checkpoint's average or current policy), watch two players, step through recorded games and see the "
        "reports of the runs under --runs (also while they train). It listens on localhost unless --host says "
        "otherwise.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only; "
                   "0.0.0.0 for the whole network)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    p.add_argument("--checkpoint", nargs="*", default=[], metavar="CK",
                   help="checkpoints offered as players (files under --runs are offered too)")
    p.add_argument("--runs", default="runs", help="directory of run directories (default runs/)")
    p.add_argument("--replays", default=None, metavar="DIR",
                   help="directory of recorded games (.jsonl) for the Replays tab (default: the --runs directory)")
    p.add_argument("--device", default="cpu", help="torch device for the agents' networks")
    p.set_defaults(func=run)


def run(args) -> int:
    import socket
    from pathlib import Path

    import uvicorn

    from ..serve import ServeSettings, create_app

    for ck in args.checkpoint:
        if not Path(ck).is_file():
            raise FileNotFoundError(f"checkpoint not found: {ck}")
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be between 0 and 65535, got {args.port}")
    app = create_app(ServeSettings(checkpoints=list(args.checkpoint), runs=args.runs, replays=args.replays,
                                   device=args.device))
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as e:
        raise ValueError(f"cannot listen on {args.host}:{args.port}: {e.strerror}") from None
    sock.listen(128)  # connections wait in the backlog until uvicorn serves them
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"deepcfr serve: open http://{shown}:{port}/  (runs: {args.runs}; Ctrl-C stops)", flush=True)
    if args.host not in LOCAL_HOSTS:
        print(f"deepcfr serve: listening on {args.host}: anyone who can reach this machine can open the page",
              file=sys.stderr, flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])
    return 0

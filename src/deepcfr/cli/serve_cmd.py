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
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 for the whole network)",
    )
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    p.add_argument(
        "--checkpoint",
        nargs="*",
        default=[],
        metavar="CK",
        help="checkpoints offered as players (files under --runs are offered too)",
    )
    p.add_argument("--runs", default="runs", help="directory of run directories (default runs/)")
    p.add_argument(
        "--replays",
        default=None,
        metavar="DIR",
        help="directory of recorded games (.jsonl) for the Replays tab (default: the --runs directory)",
    )
    p.add_argument(
        "--allow-host",
        nargs="*",
        default=[],
        metavar="NAME",
        help="more host names the page may be opened under (the Host header; besides localhost, the "
        "--host address and, with --host 0.0.0.0, this machine's names and addresses)",
    )
    p.add_argument("--device", default="cpu", help="torch device for the agents' networks")
    p.set_defaults(func=run)


def allowed_hosts(host: str, extra) -> list[str]:
    """The Host headers the page answers (a DNS-rebinding guard): localhost, the address listened on,
    the machine's own names and addresses when listening on every interface, and ``extra``."""
    import socket

    names = set(LOCAL_HOSTS) | {host} | set(extra)
    if host in ("0.0.0.0", "::", ""):
        for name in {socket.gethostname(), socket.getfqdn()}:
            names.add(name)
            try:
                names.update(info[4][0] for info in socket.getaddrinfo(name, None))
            except OSError:
                pass
    return sorted(n for n in names if n)


def run(args) -> int:
    import socket
    import threading
    from pathlib import Path

    import uvicorn

    from ..serve import ServeSettings, create_app
    from ..serve.app import warm_players

    for ck in args.checkpoint:
        if not Path(ck).is_file():
            raise FileNotFoundError(f"checkpoint not found: {ck}")
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be between 0 and 65535, got {args.port}")
    if args.replays is not None and Path(args.replays).exists() and not Path(args.replays).is_dir():
        raise ValueError(
            f"--replays takes a directory of .jsonl record files, not the file {args.replays}: give "
            f"its directory ({Path(args.replays).parent or '.'})"
        )
    app = create_app(
        ServeSettings(
            checkpoints=list(args.checkpoint),
            runs=args.runs,
            replays=args.replays,
            device=args.device,
            allowed_hosts=allowed_hosts(args.host, args.allow_host),
        )
    )
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
        print(
            f"deepcfr serve: listening on {args.host}: anyone who can reach this machine can open the page",
            file=sys.stderr,
            flush=True,
        )
    threading.Thread(target=warm_players, args=(app,), name="deepcfr-warm-players", daemon=True).start()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", server_header=False))
    server.run(sockets=[sock])
    return 0

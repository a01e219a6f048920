"""CLI: `taskqueue serve [...]`; every flag can also come from a TASKQUEUE_* variable.

Flags win over the environment, which wins over the defaults. Any bad setting ends the
program with one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from taskqueue.config import Config, ConfigError


def _on_off(raw: str) -> bool:
    """_on_off parses a switch; anything but on/off (or true/false, 1/0) is a ValueError."""
    value = {"on": True, "true": True, "1": True, "off": False, "false": False, "0": False}.get(
        raw.strip().lower()
    )
    if value is None:
        raise ValueError(raw)
    return value


# flag, Config field, parser, help
_OPTIONS: list[tuple[str, str, Callable[[str], Any], str]] = [
    ("--host", "host", str, "address to listen on"),
    ("--port", "port", int, "port to listen on (0: any free port; the start line shows it)"),
    ("--data-dir", "data_dir", Path, "directory of the SQLite store (without --database)"),
    (
        "--database",
        "database",
        str,
        "postgresql://USER@HOST[:PORT]/DB: keep tasks in PostgreSQL, shared by any number of"
        " servers (default: SQLite in --data-dir)",
    ),
    ("--workers", "workers", int, "factorial worker processes (default: the number of cores)"),
    ("--max-queue", "max_queue", int, "queued tasks at which submissions get 503 + Retry-After"),
    ("--max-factorial-n", "max_factorial_n", int, "largest n accepted for factorial tasks"),
    (
        "--fetch-concurrency",
        "fetch_concurrency",
        int,
        "http-fetch tasks run at once (and connections in total)",
    ),
    ("--fetch-per-host", "fetch_per_host", int, "connections per origin host"),
    (
        "--max-fetch-bytes",
        "max_fetch_bytes",
        int,
        "largest fetched body kept (larger: the task FAILS)",
    ),
    ("--max-body-bytes", "max_body_bytes", int, "largest submission body accepted (larger: 413)"),
    (
        "--max-attempts",
        "max_attempts",
        int,
        "attempts before a task whose lease expired is FAILED 'abandoned'",
    ),
    ("--factorial-timeout-s", "factorial_timeout_s", float, "time limit of one factorial attempt"),
    ("--lease-grace-s", "lease_grace_s", float, "how long a lease outlives its task's time limit"),
    (
        "--lease-check-s",
        "lease_check_s",
        float,
        "how often expired leases are looked for (on a database: any server's)",
    ),
    (
        "--result-ttl-s",
        "result_ttl_s",
        float,
        "finished tasks and results are deleted after this long",
    ),
    ("--cleanup-every-s", "cleanup_every_s", float, "how often expired tasks are deleted"),
    ("--cache-finished", "cache_finished", int, "finished tasks kept in memory for fast reads"),
    (
        "--fast-path",
        "fast_path",
        _on_off,
        "on|off: serve the hot routes through raw ASGI instead of FastAPI (default on)",
    ),
]


def _env_name(flag: str) -> str:
    return "TASKQUEUE_" + flag.lstrip("-").replace("-", "_").upper()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        _fail(message)


def _fail(message: str) -> NoReturn:
    print(f"taskqueue: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    """build_parser returns the argument parser (flags only; environment handled in config_from)."""
    parser = _Parser(prog="taskqueue", description="Durable asynchronous task-queue service.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    serve = sub.add_parser("serve", help="run the HTTP service")
    for flag, _, _, help_text in _OPTIONS:
        serve.add_argument(flag, help=f"{help_text} [env {_env_name(flag)}]")
    serve.add_argument(
        "--allow-fetch-cidr",
        action="append",
        default=None,
        metavar="CIDR",
        help="let http-fetch reach this range (repeatable) [env TASKQUEUE_ALLOW_FETCH_CIDR, "
        "comma-separated]",
    )
    return parser


def config_from(args: argparse.Namespace, env: dict[str, str]) -> Config:
    """config_from merges flags over environment over defaults, raising ConfigError when bad."""
    config = Config()
    for flag, field, parse, _ in _OPTIONS:
        raw = getattr(args, field)
        source = flag
        if raw is None and _env_name(flag) in env:
            raw, source = env[_env_name(flag)], _env_name(flag)
        if raw is None:
            continue
        try:
            setattr(config, field, parse(raw))
        except ValueError:
            raise ConfigError(f"{source}: invalid value {raw!r}") from None
    cidrs = args.allow_fetch_cidr
    if cidrs is None and env.get("TASKQUEUE_ALLOW_FETCH_CIDR"):
        cidrs = [c.strip() for c in env["TASKQUEUE_ALLOW_FETCH_CIDR"].split(",") if c.strip()]
    config.allow_fetch_cidrs = list(cidrs or [])
    return config.validate()


def main(argv: Sequence[str] | None = None) -> None:
    """main is the console entry point."""
    args = build_parser().parse_args(argv)
    try:
        config = config_from(args, dict(os.environ))
    except ConfigError as exc:
        _fail(str(exc))
    from taskqueue.server import ServeError, serve

    try:
        serve(config)
    except ServeError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

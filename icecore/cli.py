"""``python -m icecore``: JSON on stdout; on error one sentence on stderr and exit 1.

Commands (DESIGN.md "Contracts"): ``tables CATALOG``; more (history, inspect, plan, scan,
diff, evolve) join as their core parts land. TABLE arguments are ``CATALOG::ns.table``, a
table directory, or a metadata.json path.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from icecore.catalog import load_catalog
from icecore.errors import IcecoreError

Command = Callable[[argparse.Namespace], Any]


def cmd_tables(args: argparse.Namespace) -> list[dict[str, str]]:
    """Every table of a catalog with its current metadata location."""
    catalog = load_catalog(args.catalog)
    return [
        {
            "namespace": ".".join(ident.namespace),
            "table": ident.name,
            "identifier": str(ident),
            "metadata_location": catalog.metadata_location(ident),
        }
        for ident in catalog.list_tables()
    ]


class UsageError(Exception):
    """The command line itself is wrong (unknown command, missing argument)."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one sentence instead of usage text and exit 2."""

    def error(self, message: str) -> Any:
        raise UsageError(f"{message} (see python -m icecore --help)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one sub-command per verb."""
    parser = _Parser(prog="python -m icecore", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    tables = sub.add_parser("tables", help="list a catalog's tables")
    tables.add_argument("catalog", help="warehouse folder, sqlite:///file.db or metadata.json")
    tables.set_defaults(run=cmd_tables)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        run: Command = args.run
        result = run(args)
    except (UsageError, IcecoreError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    try:
        json.dump(result, sys.stdout, indent=2, default=str, ensure_ascii=False)
        sys.stdout.write("\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # A reader such as `head` went away; that is not our failure.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps interpreter exit quiet
    return 0

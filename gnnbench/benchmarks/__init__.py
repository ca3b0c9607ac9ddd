"""Benchmarks a user runs (`python -m gnnbench.benchmarks.<name>`), each writing the
figures it quotes, with the command that made them, to a JSON file."""

from __future__ import annotations

import argparse


def parse_with_tiny(parser: argparse.ArgumentParser, tiny: dict,
                    argv: list[str] | None = None) -> argparse.Namespace:
    """The arguments; with `--tiny`, `tiny`'s values for every option left at its default
    (the size a test runs), so that an option given on the command line still wins."""
    args = parser.parse_args(argv)
    if args.tiny:
        for key, value in tiny.items():
            if getattr(args, key) == parser.get_default(key):
                setattr(args, key, value)
    return args

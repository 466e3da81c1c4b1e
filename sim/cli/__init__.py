"""Command-line front end: thin wrappers over functions that tests can call directly."""

import argparse


def add_set_argument(parser: argparse.ArgumentParser, help: str) -> None:
    """``--set KEY=VALUE`` (repeatable): one spelling of config overrides for every command."""
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help=help
    )

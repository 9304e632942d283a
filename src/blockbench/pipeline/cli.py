"""`blockbench COMMAND [options]`: one command for the package's tools.

Each tool is a function `(argv) -> exit status` in the layer it belongs to, imported only
when its command runs: `blockbench measure` and `blockbench gpu-kit` (a GPU machine without a
package registry) load no pandas or Snakemake they do not use, and a tool whose module is
missing breaks no other. Each tool has this one spelling; scripts/gpu_run.py is `blockbench
gpu-kit` for a machine where nothing is installed. Without installing the package,
`python -m blockbench COMMAND` with src/ on PYTHONPATH does the same.
"""

import argparse
import sys
from importlib import import_module
from typing import NamedTuple


class Command(NamedTuple):
    """Where a subcommand's function lives, the line `blockbench --help` shows for it, and
    whether that listing shows it: a verb only the project's own jobs or maintainers call
    runs all the same, unlisted, so that the listing is what a user runs."""

    module: str
    function: str
    summary: str
    listed: bool = True


COMMANDS = {
    # unlisted: one process of one cell, measured by hand while developing (docs/method.md);
    # a user measures a run (scripts/bootstrap.py run), whose jobs call its function directly
    "measure": Command(
        "blockbench.measure.parent",
        "main",
        "measure one grid cell and write its JSON",
        listed=False,
    ),
    "host-check": Command(
        "blockbench.measure.host_check", "state_check", "the host's state, before measuring"
    ),
    "core-speed": Command(
        "blockbench.measure.host_check", "speed_check", "does each core keep its speed?"
    ),
    "gpu-kit": Command(
        "blockbench.pipeline.gpu_kit",
        "main",
        "the GPU claims' cells, on a GPU machine (docs/gpu.md)",
    ),
    "claims": Command(
        "blockbench.pipeline.claims_list", "main", "each claim: its devices, cells and time here"
    ),
    "study": Command(
        "blockbench.pipeline.study_cli", "main", "a between-run study from several runs' raw JSON"
    ),
    "compare": Command(
        "blockbench.present.run_comparison", "main", "several runs' claims.csv, claim by claim"
    ),
    "explain": Command(
        "blockbench.pipeline.explain_cli",
        "main",
        "one claim of a run: its part, its phases, the references",
    ),
    "regenerate": Command(
        "blockbench.pipeline.regenerate",
        "main",
        "rebuild a run's claims and figures from its raw JSON",
    ),
    # unlisted: the maintainers rewrite the README's first screen with it when a reference
    # changes (tests/test_docs.py says when)
    "front-page": Command(
        "blockbench.present.front_page",
        "main",
        "write the README's tables from the references",
        listed=False,
    ),
}


def listed() -> list[str]:
    """The commands `blockbench --help` names, in their order."""
    return [name for name, command in COMMANDS.items() if command.listed]


def parser() -> argparse.ArgumentParser:
    """The parser of the command's name alone: each tool parses its own options."""
    listing = "\n".join(f"  {name:<12}{COMMANDS[name].summary}" for name in listed())
    p = argparse.ArgumentParser(
        prog="blockbench",
        description="One command for blockbench's tools.",
        epilog=f"commands:\n{listing}\n\n`blockbench COMMAND --help` gives its options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("command", metavar="COMMAND", help="one of those below")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run COMMAND with the arguments after it; its exit status."""
    argv = sys.argv[1:] if argv is None else argv
    p = parser()
    name = p.parse_args(argv[:1]).command  # --help, or no command, exits here
    if name not in COMMANDS:  # argparse's `choices` would name the unlisted ones too
        names = ", ".join(map(repr, listed()))
        p.error(f"argument COMMAND: invalid choice: {name!r} (choose from {names})")
    command = COMMANDS[name]
    return getattr(import_module(command.module), command.function)(argv[1:])

"""Running a stage as a Snakemake job: its output goes to the rule's log, and an error in
the user's input ends the job with one line that names the file and the reason.

Without this, an exception escapes the log redirection: the log stays empty and the console
shows a traceback that names neither the file nor what is wrong with it.
"""

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout

from blockbench.errors import InputError


@contextmanager
def logged(log_path: str) -> Iterator[None]:
    with open(log_path, "w") as log:
        try:
            with redirect_stdout(log), redirect_stderr(log):
                yield
        except InputError as exc:
            line = f"error: {exc}"
            print(line, file=log, flush=True)
            print(line, file=sys.stderr, flush=True)
            sys.exit(1)
        except Exception:
            log.write(traceback.format_exc())
            raise

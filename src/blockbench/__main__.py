"""`python -m blockbench COMMAND`: the `blockbench` command where the package is not
installed (src/ on PYTHONPATH), as on a GPU machine without a package registry."""

import sys

from blockbench.pipeline.cli import main

if __name__ == "__main__":
    sys.exit(main())

# Grid and target lists, computed by the blockbench package from the validated config.
from pathlib import Path

from blockbench import figures, grid
from blockbench.aggregate import raw_files
from blockbench.sampling import per_process
from blockbench.stages import read_claims

grid.check(config)
# A claim or article figure that could never be judged stops the run before any job.
read_claims(config["claims"], config["articles"])

PLAN = grid.plan(config)
RUN = config["run_label"]
RAW = [cell.path(RUN, r) for cell in PLAN for r in range(config["repeats"])]
MERGED = [str(p) for run in config["merge"] for p in raw_files(Path(run))]
TABLES = expand(
    "results/tables/{name}.{ext}",
    name=["measurements", "speedups"],
    ext=["csv", "md"],
) + [
    "results/tables/measurements.parquet",
    "results/tables/processes.parquet",
    "results/tables/processes.csv",
]
FIGURES = expand("results/figures/{name}.{ext}", name=figures.NAMES, ext=["png", "svg"])
CLAIMS = ["results/claims.csv", "results/claims.md", "results/claims.rst"]
ENV = "../../environment.yml"


def figure_category(wc):
    """Report menus sort by name: the articles' figures first, after them the verdicts."""
    return (
        "1. The articles, redrawn" if wc.name.startswith("article_") else "3. Figures"
    )


def phases_of(wc):
    """The phases a cell measures, for measure.py's --phases ('' : all that apply)."""
    cell = grid.Cell(wc.device, wc.workload, wc.impl, int(wc.size))
    return ",".join(PLAN.get(cell) or ())


# Minutes a measurement job may take on a cluster (the cell's budget and start-up).
RUNTIME = max(10, int(config["budget_s"] / 60) + 5)

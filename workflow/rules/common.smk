# Grid and target lists, computed by the blockbench package from the validated config.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from blockbench import figures, grid  # noqa: E402
from blockbench.aggregate import raw_files  # noqa: E402

grid.check(config)

CELLS = grid.cells(config)
RUN = config["run_label"]
RAW = [cell.path(RUN) for cell in CELLS]
MERGED = [str(p) for run in config["merge"] for p in raw_files(Path(run))]
TABLES = expand(
    "results/tables/{name}.{ext}",
    name=["measurements", "speedups"],
    ext=["csv", "md"],
) + ["results/tables/measurements.parquet"]
FIGURES = expand("results/figures/{name}.{ext}", name=figures.NAMES, ext=["png", "svg"])
CLAIMS = ["results/claims.csv", "results/claims.md"]
ENV = "../../environment.yml"


def slurm_extra(device):
    """CPU cells may ask for a whole node: a noisy neighbour ruins a CPU timing."""
    return (
        "--exclusive" if device == "cpu" and config["cluster"]["exclusive_cpu"] else ""
    )

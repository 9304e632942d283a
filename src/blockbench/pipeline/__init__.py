"""Running the workflow: the grid a config asks for (`grid`), the order its jobs run in
(`run_order`), the stages the Snakemake rules call (`stages`, `job_log`), JAX releases
(`versions`), SLURM (`cluster`), Snakemake's scheduler kept quiet (`scheduler_patch`), the
GPU kit (`gpu_kit`), a committed run rebuilt from its raw JSON (`regenerate`), and the
`blockbench` command that reaches every tool (`cli`, `study_cli`).

May import every other layer; only the workflow, the scripts and the benchmarks import it."""

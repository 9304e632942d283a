# After a run's first stage: how many more rounds each block and lone cell needs for the
# precision its claims ask (Stein's two-stage rule, blockbench.judge.stopping), and why each
# claim part stops. A checkpoint: the tables rule reads its decision back (common.smk,
# `measured`) and the DAG grows by the rounds it adds; `snakemake -n` shows the first stage.


checkpoint rounds:
    input:
        raw=first_stage,
        # every claims file, in the order config `claims` names them, and their catalogs'
        # published figures
        claims=CLAIMS_FILES,
        figures=FIGURES_FILES,
        studies=STUDIES,
    output:
        layout.DECISION,
    log:
        "logs/rounds/{run_label}.log",
    wildcard_constraints:
        run_label=r"[^/]+",
    # runs where Snakemake runs, never as a cluster job
    localrule: True
    conda:
        ENV
    params:
        units=PLAN.units,
        precision=grid.precision(config),
        budget_minutes=config["budget_minutes"],
        only=config["only"],
    script:
        "../scripts/rounds.py"

# Verdict per claim and run: reproduced, not_reproduced, inconclusive or not_run (with why).


rule claims:
    input:
        measurements="results/tables/measurements.parquet",
        processes="results/tables/processes.parquet",
        # every claims file, in the order config `claims` names them, and their catalogs'
        # published figures
        claims=CLAIMS_FILES,
        figures=FIGURES_FILES,
        studies=STUDIES,
        # why each part stopped where it did: every run's rounds decision (rules/rounds.smk)
        decisions=DECISIONS,
    output:
        csv=report(
            "results/claims.csv",
            caption="../report/claims_table.rst",
            category="2. Verdicts",
        ),
        md="results/claims.md",
        # the verdict table the HTML report opens on (workflow/report/workflow.rst)
        rst="results/claims.rst",
        # every part of every claim, judged: what the figures read
        parts_csv="results/tables/claim_parts.csv",
        parts_parquet="results/tables/claim_parts.parquet",
        # this run beside the committed references: the README's verdict map with this run
        # first (blockbench.present.run_map), its CSV, and the copy the report opens on
        map_md="results/verdict_map.md",
        map_csv=report(
            "results/verdict_map.csv",
            caption="../report/verdict_map.rst",
            category="2. Verdicts",
        ),
        map_rst="results/verdict_map.rst",
    log:
        "logs/claims.log",
    # runs where Snakemake runs, never as a cluster job
    localrule: True
    conda:
        ENV
    params:
        run_label=RUN,
        # merged runs given as DIR=LABEL, shown under that label
        labels=MERGE_LABELS,
        # the claims the run judges (every one where `only` names none)
        only=config["only"],
        # the references the map sets the run beside: results/reference of the checkout
        # blockbench is read from (a module's too, read from a path); none for a package
        # fetched from git (rules/package.smk), which brings no results
        reference=MAP_REFERENCE,
    script:
        "../scripts/claims.py"

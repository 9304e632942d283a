# Verdict per claim and run: reproduced, not_reproduced, inconclusive or not_run (with why).


rule claims:
    input:
        measurements="results/tables/measurements.parquet",
        processes="results/tables/processes.parquet",
        claims=config["claims"],
    output:
        csv=report(
            "results/claims.csv",
            caption="../report/claims_table.rst",
            category="Claims",
        ),
        md="results/claims.md",
    log:
        "logs/claims.log",
    conda:
        ENV
    script:
        "../scripts/claims.py"

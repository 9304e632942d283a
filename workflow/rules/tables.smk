# All raw JSON (this run, every round its checkpoint added, and merged runs) into pandas
# tables, CSV/Parquet/Markdown, with why each claim part stopped where it did.


rule tables:
    input:
        raw=measured,
        first=FIRST_STAGE,
        decided=DECIDED,
        merged=MERGED,
        # the run's catalogs: the workloads of their own that the records may name
        claims=CLAIMS_FILES,
    output:
        csv=report(
            "results/tables/measurements.csv",
            caption="../report/measurements.rst",
            category="4. Tables",
        ),
        parquet="results/tables/measurements.parquet",
        processes="results/tables/processes.parquet",
        processes_csv="results/tables/processes.csv",
        md="results/tables/measurements.md",
        speedups=report(
            "results/tables/speedups.csv",
            caption="../report/speedups.rst",
            category="4. Tables",
        ),
        speedups_md="results/tables/speedups.md",
    log:
        "logs/tables.log",
    # runs where Snakemake runs, never as a cluster job
    localrule: True
    conda:
        ENV
    params:
        # merged runs given as DIR=LABEL, shown under that label
        labels=MERGE_LABELS,
    script:
        "../scripts/tables.py"

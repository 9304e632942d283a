# One job per figure, from the measurements table; each with a caption for the report.


rule figure:
    input:
        "results/tables/measurements.parquet",
        processes="results/tables/processes.parquet",
        # the claims as the claims stage judged them (never judged again here)
        claim_parts="results/tables/claim_parts.parquet",
        claims=CLAIMS_FILES,
        figures=FIGURES_FILES,
    output:
        png=report(
            "results/figures/{name}.png",
            caption="../report/figure.rst",
            category=figure_category,
        ),
        svg="results/figures/{name}.svg",
    log:
        "logs/figures/{name}.log",
    wildcard_constraints:
        name="|".join(FIGURE_NAMES),
    # runs where Snakemake runs, never as a cluster job
    localrule: True
    conda:
        ENV
    script:
        "../scripts/figure.py"

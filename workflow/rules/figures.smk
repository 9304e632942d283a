# One job per figure, from the measurements table; each with a caption for the report.


rule figure:
    input:
        "results/tables/measurements.parquet",
        processes="results/tables/processes.parquet",
        claims=config["claims"],
        articles=config["articles"],
        studies=STUDIES,
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
        name="|".join(figures.NAMES),
    # runs where Snakemake runs, never as a cluster job
    localrule: True
    conda:
        ENV
    script:
        "../scripts/figure.py"

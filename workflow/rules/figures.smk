# Every figure of the run in one job, from the measurements table, each with a caption for the
# report: the plotting libraries load once (2.4 s a job on 2 cores, where one figure draws in
# 0.5 to 2 s), and the job draws its figures in parallel on the cores Snakemake gives it.


rule figures:
    input:
        "results/tables/measurements.parquet",
        processes="results/tables/processes.parquet",
        # the claims as the claims stage judged them (never judged again here)
        claim_parts="results/tables/claim_parts.parquet",
        claims=CLAIMS_FILES,
        figures=FIGURES_FILES,
    output:
        png=[figure_png(name) for name in FIGURE_NAMES],
        svg=expand("results/figures/{name}.svg", name=FIGURE_NAMES),
    log:
        "logs/figures.log",
    # runs where Snakemake runs, never as a cluster job
    localrule: True
    conda:
        ENV
    # one figure a core, up to the cores Snakemake may use (--cores)
    threads: len(FIGURE_NAMES)
    params:
        names=FIGURE_NAMES,
        # the committed references the verdict map's figure sets the run beside
        reference=MAP_REFERENCE,
        run_label=RUN,
    script:
        "../scripts/figures.py"

# The JAX-version axis (config `jax_versions`): one environment per release other than the
# installed one, made once and reused by every cell of that release, and each claim's
# value and verdict against the release.


# Holds the measurement slot: installing a release must not run beside a measurement.
# Made first (a priority above every cell's), so that the release's cells take their places
# in the run's interleaved order instead of all coming last.
rule jax_env:
    output:
        f"{ENVS}/jax-{{version}}/{versions.STAMP}",
    log:
        "logs/jax_env/{version}.log",
    wildcard_constraints:
        version=r"[0-9][0-9.]*",
    priority: ENV_PRIORITY
    localrule: True
    conda:
        ENV
    resources:
        measure_host=1,
    script:
        "../scripts/jax_env.py"


rule claims_by_version:
    input:
        "results/claims.csv",
    output:
        png=report(
            "results/figures/claims_by_version.png",
            caption="../report/claims_by_version.rst",
            category="1. The claims, redrawn",
        ),
        svg="results/figures/claims_by_version.svg",
        csv=report(
            "results/tables/claims_by_version.csv",
            caption="../report/claims_by_version.rst",
            category="1. The claims, redrawn",
        ),
        md="results/tables/claims_by_version.md",
    log:
        "logs/claims_by_version.log",
    # runs where Snakemake runs, never as a cluster job
    localrule: True
    conda:
        ENV
    script:
        "../scripts/claims_by_version.py"

# One job per grid cell and worker process (`repeats` of them). `measure_host` is a global
# resource limited to 1 by the default profile, and each job also takes a host-wide lock
# (blockbench.measure.parent), so no two measurements ever share a host's cores or its GPU,
# whatever --cores says.
# Priority orders the run (blockbench.pipeline.run_order): process 0 of every cell comes before process
# 1 of any, so they see the machine at different minutes, and the cells a claim compares run
# back to back in a shuffled order within each round (randomized interleaved blocks).
# CPU cells and accelerator cells are two rules so that each CPU job's resources are
# constants: Snakemake inspects every callable anew for every job, which on a grid of 10,000
# cells is most of the time it takes to plan the run.


rule measure:
    input:
        jax_env=jax_env_of,
        after=after_of,
        # process 0 of the cell, whose loops a sample every later process uses
        first=first_of,
    output:
        RAW_FILE,
    log:
        "logs/measure/{run_label}/{device}/{workload}/{impl}/{size}/{repeat}.log",
    wildcard_constraints:
        device="cpu",
        size=r"\d+",
        repeat=r"\d+",
    priority: priority_of
    # only used by cluster executors: a block round's chain of cells (`after`) is one job on
    # one node, a lone cell one of its own (profiles/slurm: group-components)
    group:
        "measure_cpu"
    conda:
        ENV
    threads: CELL_THREADS
    # the rest only matters on a cluster (profiles/slurm, config `cluster`)
    resources:
        measure_host=1,
        runtime=RUNTIME,
        mem_mb=MEM_MB,
        cpus_per_task=CPU_CELL_CPUS,
        gpu=0,
        gpu_model="",
        slurm_account=ACCOUNT,
        slurm_extra="--exclusive" if CLUSTER["exclusive_cpu"] else "",
    # the job's record (blockbench.pipeline.measure_job): its cell and process, their settings as
    # one record (blockbench.records.params: sampling, phases, block, first rounds, design,
    # ... as the run plan gives them, the GPU kit's too) and its place in the run
    params:
        job=measure_job,
        python=PYTHON,
    # a shell command, not a script: a script's preamble imports Snakemake before every process
    shell:
        "{params.python} -m blockbench.pipeline.measure_job {params.job:q} {output:q} {log:q}"


use rule measure as measure_accelerator with:
    input:
        jax_env=jax_env_of,
        after=after_of,
        first=first_of,
        gpu_ready=gpu_ready_of,
    wildcard_constraints:
        device="gpu|tpu",
        size=r"\d+",
        repeat=r"\d+",
    # its own group, never merged (no group-components for it): a GPU cell must not pull CPU
    # cells into a submission that holds a GPU; a block round's GPU cells are one job
    group:
        "measure_accelerator"
    # under --sdm conda a GPU cell runs the CUDA build of the locked JAX
    conda:
        ENV_CUDA
    resources:
        measure_host=1,
        runtime=RUNTIME,
        mem_mb=MEM_MB,
        cpus_per_task=CLUSTER["gpu_cpus"],
        gpu=lambda wc: int(wc.device == "gpu"),
        gpu_model=lambda wc: CLUSTER["gpu_model"] if wc.device == "gpu" else "",
        slurm_account=ACCOUNT,
        slurm_extra="--exclusive" if CLUSTER["exclusive_gpu"] else "",


# Before a run's first GPU cell: can JAX use a GPU here (driver, GPU, CUDA plugin)? On SLURM
# one short GPU job; where it cannot, the job ends with the cause and no GPU cell starts.
rule gpu_ready:
    output:
        layout.GPU_READY,
    log:
        "logs/gpu_ready/{run_label}.log",
    conda:
        ENV_CUDA
    resources:
        measure_host=1,
        runtime=10,
        mem_mb=MEM_MB,
        cpus_per_task=CLUSTER["gpu_cpus"],
        gpu=1,
        gpu_model=CLUSTER["gpu_model"] or "",
        slurm_account=ACCOUNT,
    script:
        "../scripts/gpu_ready.py"


# Before the first submission to SLURM: every setting the cluster needs is there (the
# account, a status command that works, ...), and every catalog that declares workloads is
# where the nodes see it, or the run stops and says which is missing.
onstart:
    cluster.check(workflow, CLUSTER)
    logger.info(f"blockbench: Snakemake's re-scheduling timers: {QUIET}")

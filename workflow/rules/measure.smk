# One job per grid cell and worker process (`repeats` of them). `measure_host` is a global
# resource limited to 1 by the default profile, and scripts/measure.py also takes a host-wide
# lock, so no two measurements ever share a host's cores or its GPU, whatever --cores says.
# Priority spreads a cell's processes over the run: process 0 of every cell comes before
# process 1 of any, so they see the machine at different minutes.


rule measure:
    output:
        "results/raw/{run_label}/{device}/{workload}/{impl}/{size}/{repeat}.json",
    log:
        "logs/measure/{run_label}/{device}/{workload}/{impl}/{size}/{repeat}.log",
    wildcard_constraints:
        device="cpu|gpu|tpu",
        size=r"\d+",
        repeat=r"\d+",
    priority: lambda wc: config["repeats"] - int(wc.repeat)
    group:
        # only used by cluster executors: small CPU cells share one submission, run in turn
        lambda wc: "measure_cpu" if wc.device == "cpu" else None
    conda:
        ENV
    resources:
        measure_host=1,
        runtime=max(10, int(config["budget_s"] / 60) + 5),
        gpu=lambda wc: int(wc.device == "gpu"),
        gpu_model=lambda wc: (
            config["cluster"]["gpu_model"] if wc.device == "gpu" else ""
        ),
        slurm_extra=lambda wc: slurm_extra(wc.device),
    params:
        sampling=config["sampling"],
        budget_s=config["budget_s"],
        phases=phases_of,
        threads=config["threads"],
        seed=config["seed"],
        matmul_precision=config["matmul_precision"],
    script:
        "../scripts/measure.py"

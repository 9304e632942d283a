"""Loaded by every Python process of the two-node-kinds SLURM run (tests/test_slurm.py puts this
folder on PYTHONPATH): the one test node passed off as two kinds of node. A SLURM job whose id
is even stands for a node of another partition: its CPU model reads as another one, through
the suite's own hook (blockbench.measure.provenance.FAKE_CPU_MODEL)."""

import os

job = os.environ.get("SLURM_JOB_ID", "")
if job.isdigit() and int(job) % 2 == 0:
    os.environ["BLOCKBENCH_FAKE_CPU_MODEL"] = "Other CPU of another partition"

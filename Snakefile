# blockbench: re-measure published JAX vs NumPy speed claims and judge them.
# The workflow is defined in workflow/Snakefile, where the Snakemake workflow catalog and
# another workflow's `module` look for it; this file keeps `snakemake` run from the
# repository root working as it always has.
#
# This is what `include: "workflow/Snakefile"` does, except that the included file's
# default target (`all`) is kept: an `include:` restores the including file's, which has
# none. Snakemake's `module` includes a workflow the same way.
workflow.include("workflow/Snakefile", overwrite_default_target=True)

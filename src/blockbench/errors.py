"""Errors every layer shares."""


class InputError(ValueError):
    """Input the user can fix (a merged file, a claims entry, a study): the workflow reports
    it as one line naming the file and the reason (blockbench.pipeline.job_log), not a traceback."""

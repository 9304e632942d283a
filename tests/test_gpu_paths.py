"""The GPU paths, reviewed without a GPU (../shared/GPU_REVIEW.md): each fix, on the CPU,
with fakes where the GPU would be."""

import pytest

from blockbench import cell


@pytest.mark.parametrize(
    ("message", "status"),
    [
        ("INTERNAL: CUBLAS_STATUS_ALLOC_FAILED", "oom"),
        ("CUDA_ERROR_OUT_OF_MEMORY: out of memory", "oom"),
        ("CUDNN_STATUS_ALLOC_FAILED", "oom"),
        ("XLA OOM while compiling", "oom"),
        ("no room left in the shape for axis 2", "error"),
        ("zoom factor must be positive", "error"),
    ],
)
def test_out_of_memory_is_matched_by_whole_words_and_cublas_markers(message, status):
    """Review 7: a loose substring called "room" an out-of-memory; cuBLAS's was missed."""
    assert cell.classify(RuntimeError(message)) == status

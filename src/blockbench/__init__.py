"""blockbench: blocking-correct re-measurement of published JAX vs NumPy speed claims."""

__version__ = "0.1.0"

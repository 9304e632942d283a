"""The articles' workloads: each module holds its input maker, float64 check and functions."""

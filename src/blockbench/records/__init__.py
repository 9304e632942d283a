"""The data model: what a measurement is asked to do (`spec`), the record it writes and its
schema (`store`), and where a run's records live (`layout`). Imports nothing else of
blockbench but `errors`, and no NumPy or JAX, so every layer can read it."""

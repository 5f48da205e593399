"""The domain app: accelerator types, clusters, workloads, experiments and their runs."""

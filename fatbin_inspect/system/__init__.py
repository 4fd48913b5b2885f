"""This machine's CUDA stack (GPUs, drivers, runtimes); only the CLI calls these probes."""

"""deepspeed.profiling for dsrt: the flops_profiler block."""

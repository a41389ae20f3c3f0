#pragma once
// glibc's allocator, tuned once per process when the first Engine is made (docs/zero.md, "Step time").
// By default glibc hands large freed blocks back to the kernel (mmap threshold that grows only up to 32 MiB,
// trim threshold twice that, and per-thread arenas that shrink): a training step frees and re-allocates
// layer-sized tensors (autograd's gradients of a 2048 x 2048 layer are 16 MiB), so whether the next step
// faults them in again page by page depended on which thread freed what — 0 or ~4,000-8,000 minor faults per
// step, run to run, costing up to half the step's CPU (bench/zero_step_time.sh, 16.8 M parameters). A fixed
// 64 MiB mmap threshold and a 256 MiB trim threshold keep such blocks in the process for reuse, as PyTorch's
// caching allocator does on GPUs. A user who set either (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, or
// GLIBC_TUNABLES naming them) keeps theirs; DSRT_MALLOC_TUNING=0 leaves glibc's defaults.

namespace dsrt {

/// Applies the tuning above (once; later calls do nothing). Returns true when it changed glibc's settings.
bool tuneMallocForTraining();

}  // namespace dsrt

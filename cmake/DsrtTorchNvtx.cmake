# Call before find_package(Torch): lets older torch 2 wheels (2.6, 2.7, ...) configure next to a CUDA toolkit >= 12.9.
# Those torches' Caffe2 CUDA config looks for NVTX3's headers only inside torch's own source tree; not finding
# them, it falls back to CUDA::nvToolsExt, a library CUDA 12.9 removed, and the configure fails ("The link
# interface of target torch::nvtoolsext contains CUDA::nvToolsExt but the target was not found"). Finding the
# toolkit's header-only NVTX3 first fills the cache entry torch's find_path reads, so it takes that branch.
# Newer torches no longer look and a torch without CUDA never reaches that code: both are unaffected.
# Installed beside dsrt-config.cmake, which calls it before find_dependency(Torch).
macro(dsrt_find_nvtx3_for_torch)
  if(NOT nvtx3_dir)
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND)
      find_path(nvtx3_dir NAMES nvtx3/nvToolsExt.h HINTS ${CUDAToolkit_INCLUDE_DIRS} NO_DEFAULT_PATH)
    endif()
  endif()
endmacro()

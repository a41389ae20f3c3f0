# Sources directly in runtime/: the strategy seam, distributed init, the engine.
target_sources(dsrt PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/backend_device_check.cc
  ${CMAKE_CURRENT_LIST_DIR}/compat/allgather_into_tensor.cc
  ${CMAKE_CURRENT_LIST_DIR}/compat/event_compat.cc
  ${CMAKE_CURRENT_LIST_DIR}/compat/process_group_compat.cc
  ${CMAKE_CURRENT_LIST_DIR}/compat/reduce_scatter_tensor.cc
  ${CMAKE_CURRENT_LIST_DIR}/dist_env.cc
  ${CMAKE_CURRENT_LIST_DIR}/engine.cc
  ${CMAKE_CURRENT_LIST_DIR}/engine_checkpoint.cc
  ${CMAKE_CURRENT_LIST_DIR}/engine_precision.cc
  ${CMAKE_CURRENT_LIST_DIR}/engine_timers.cc
  ${CMAKE_CURRENT_LIST_DIR}/grad_strategy.cc
  ${CMAKE_CURRENT_LIST_DIR}/initialize.cc
  ${CMAKE_CURRENT_LIST_DIR}/malloc_tuning.cc
  ${CMAKE_CURRENT_LIST_DIR}/progress_file.cc
  ${CMAKE_CURRENT_LIST_DIR}/rank_env.cc
)

# The NCCL process group: only when asked for, LibTorch was built with CUDA, and NCCL's header is found.
# A CPU LibTorch (Debian's) never takes this branch, so the CPU build cannot break on it.
if(DSRUN_WITH_CUDA AND TARGET torch_cuda)
  find_path(DSRT_NCCL_INCLUDE_DIR nccl.h HINTS ENV NCCL_HOME ENV CUDA_HOME PATH_SUFFIXES include)
  find_path(DSRT_TORCH_NCCL_HEADER torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp PATHS ${TORCH_INCLUDE_DIRS})
  if(DSRT_NCCL_INCLUDE_DIR AND DSRT_TORCH_NCCL_HEADER)
    message(STATUS "libdsrt: NCCL process group enabled (nccl.h in ${DSRT_NCCL_INCLUDE_DIR})")
    target_compile_definitions(dsrt PRIVATE DSRT_WITH_NCCL USE_C10D_NCCL)
    set(DSRT_NCCL_ENABLED TRUE)
    target_include_directories(dsrt PRIVATE ${DSRT_NCCL_INCLUDE_DIR})
  else()
    message(STATUS "libdsrt: CUDA LibTorch without nccl.h or ProcessGroupNCCL.hpp: NCCL process group disabled")
  endif()
endif()
if(DSRUN_REQUIRE_NCCL AND NOT DSRT_NCCL_ENABLED)
  message(FATAL_ERROR "DSRUN_REQUIRE_NCCL: libdsrt's NCCL path cannot be built: it needs DSRUN_WITH_CUDA=ON, a CUDA "
                      "LibTorch (target torch_cuda) and nccl.h (NCCL_HOME or CUDA_HOME)")
endif()


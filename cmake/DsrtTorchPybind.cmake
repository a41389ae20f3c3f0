# dsrt_torch_pybind11(): the pybind11 an extension sharing objects with torch must be built with.
# Sets DSRT_PYBIND11_INCLUDE_DIR to torch's bundled pybind11 headers (PyPI's torch ships them in
# torch/include), else to the system's (Debian's torch 1.13 was built with pybind11-dev), and
# DSRT_PYBIND11_ABI_DEFINITIONS to torch's PYBIND11_COMPILER_TYPE/STDLIB/BUILD_ABI as
# torch.utils.cpp_extension passes them (empty where torch reports none: pybind11 3 handles its ABI itself).
include(${CMAKE_CURRENT_LIST_DIR}/DsrtTorchHeaders.cmake)

function(dsrt_torch_pybind11)
  dsrt_torch_header_dir(_dir "pybind11/pybind11.h")
  if(NOT _dir)
    find_path(_dsrt_system_pybind11 pybind11/pybind11.h NO_CACHE)
    if(_dsrt_system_pybind11)
      set(_dir "${_dsrt_system_pybind11}")
    endif()
  endif()
  set(DSRT_PYBIND11_INCLUDE_DIR "${_dir}" PARENT_SCOPE)

  set(_defs)
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -W ignore -c
            "import torch.utils.cpp_extension as e; f = getattr(e, '_get_pybind11_abi_build_flags', None); print(';'.join(f() if f else []))"
    OUTPUT_VARIABLE _flags OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0)
    foreach(flag IN LISTS _flags)
      string(REGEX REPLACE "^-D" "" def "${flag}")
      # torch writes the values shell-escaped (-DPYBIND11_BUILD_ABI=\"_cxxabi1016\"); CMake quotes a
      # definition's value itself, so the backslashes must go or they reach the compiler.
      string(REPLACE "\\\"" "\"" def "${def}")
      if(def)
        list(APPEND _defs "${def}")
      endif()
    endforeach()
  endif()
  set(DSRT_PYBIND11_ABI_DEFINITIONS "${_defs}" PARENT_SCOPE)
endfunction()

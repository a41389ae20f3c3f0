# dsrt_torch_header_dir(<out-var> <header>): the first of TORCH_INCLUDE_DIRS that holds <header> (a path
# relative to an include directory, e.g. "ATen/ATen.h"), or "" when none does. What the torch found ships
# differs by build (PyPI's wheels bundle pybind11 but not gloo's headers; Debian's is the other way round),
# so DsrtTorchCompat and DsrtTorchPybind ask this one function. Call after find_package(Torch).
function(dsrt_torch_header_dir out header)
  set(_found "")
  foreach(dir IN LISTS TORCH_INCLUDE_DIRS)
    if(EXISTS "${dir}/${header}")
      set(_found "${dir}")
      break()
    endif()
  endforeach()
  set(${out} "${_found}" PARENT_SCOPE)
endfunction()

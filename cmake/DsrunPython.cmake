# DSRUN_PYTHON_EXECUTABLE: the Python interpreter the dsrt package is built for and dsrun runs Python ranks
# with by default. It must import the torch whose LibTorch libdsrt links (Debian: /usr/bin/python3 with
# python3-torch 1.13 shares libtorch.so.1.13 with libtorch-dev), so a pyenv or venv `python3` earlier on
# PATH that lacks torch is skipped. -DDSRUN_PYTHON_EXECUTABLE=PATH chooses one; without any, "python3".
# Under `pip install .` it is the interpreter pip runs (scikit-build-core passes it as Python_EXECUTABLE).
if(SKBUILD AND NOT DSRUN_PYTHON_EXECUTABLE)
  if(Python3_EXECUTABLE)
    set(DSRUN_PYTHON_EXECUTABLE ${Python3_EXECUTABLE} CACHE STRING "Python interpreter of the dsrt package")
  elseif(Python_EXECUTABLE)
    set(DSRUN_PYTHON_EXECUTABLE ${Python_EXECUTABLE} CACHE STRING "Python interpreter of the dsrt package")
  endif()
endif()
if(NOT DSRUN_PYTHON_EXECUTABLE)
  set(_dsrun_python python3)
  foreach(candidate /usr/bin/python3 python3)
    find_program(_dsrun_candidate NAMES ${candidate} NO_CACHE)
    if(_dsrun_candidate)
      execute_process(COMMAND ${_dsrun_candidate} -c "import torch" RESULT_VARIABLE _dsrun_no_torch
                      OUTPUT_QUIET ERROR_QUIET)
      if(_dsrun_no_torch EQUAL 0)
        set(_dsrun_python ${_dsrun_candidate})
        unset(_dsrun_candidate)
        break()
      endif()
    endif()
    unset(_dsrun_candidate)
  endforeach()
  set(DSRUN_PYTHON_EXECUTABLE ${_dsrun_python} CACHE STRING
      "Python interpreter of the dsrt package and dsrun's default for Python ranks")
endif()
message(STATUS "dsrun: Python ranks run with ${DSRUN_PYTHON_EXECUTABLE} by default")

# The LibTorch to build against is the one that interpreter imports (a venv's torch from PyPI, or Debian's),
# found through torch.utils.cmake_prefix_path unless the caller pointed Torch_DIR somewhere else. Its lib/
# also goes first on CMAKE_LIBRARY_PATH: TorchConfig looks each library up with PATHS, which CMake searches
# after the system directories, so with Debian's libtorch-dev installed a venv build would otherwise link
# Debian's libc10.so next to the venv's libtorch (two c10s in one process: heap corruption at exit).
if(NOT Torch_DIR)
  execute_process(COMMAND ${DSRUN_PYTHON_EXECUTABLE} -W ignore -c
                          "import os, torch.utils; print(torch.utils.cmake_prefix_path); print(os.path.dirname(torch.__file__))"
                  OUTPUT_VARIABLE _dsrun_torch_where OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                  RESULT_VARIABLE _dsrun_torch_rc)
  string(REPLACE "\n" ";" _dsrun_torch_where "${_dsrun_torch_where}")
  list(LENGTH _dsrun_torch_where _dsrun_torch_n)
  if(_dsrun_torch_rc EQUAL 0 AND _dsrun_torch_n EQUAL 2)
    list(GET _dsrun_torch_where 0 _dsrun_torch_prefix)
    list(GET _dsrun_torch_where 1 _dsrun_torch_dir)
    if(EXISTS "${_dsrun_torch_prefix}/Torch/TorchConfig.cmake")
      list(PREPEND CMAKE_PREFIX_PATH "${_dsrun_torch_prefix}")
      if(EXISTS "${_dsrun_torch_dir}/lib")
        list(PREPEND CMAKE_LIBRARY_PATH "${_dsrun_torch_dir}/lib")
      endif()
    endif()
  endif()
endif()

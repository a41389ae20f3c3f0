# dsrt_add_pytest(<name> <file> <label> <timeout> [MISSING <why>]): registers
# `<DSRUN_PYTHON_EXECUTABLE> -m pytest -q -rs <file>` (file relative to the calling directory) as CTest test
# <name>, labelled <label>, with the build's python/ on PYTHONPATH, DSRT_BUILD_DIR set and one OpenMP
# thread. MISSING: something the suite needs is absent; the test is registered anyway and fails printing
# "<name>: <why>", so a missing dependency is never a silent pass. Used by tests/python and
# tests/deepspeed_peer.
function(dsrt_add_pytest name file label timeout)
  cmake_parse_arguments(T "" "MISSING" "" ${ARGN})
  if(T_MISSING)
    add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} -E echo "${name}: ${T_MISSING}")
    set_tests_properties(${name} PROPERTIES LABELS ${label} WILL_FAIL ON)
    return()
  endif()
  add_test(NAME ${name}
           COMMAND ${DSRUN_PYTHON_EXECUTABLE} -m pytest -q -p no:cacheprovider -rs
                   ${CMAKE_CURRENT_SOURCE_DIR}/${file}
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES LABELS ${label} TIMEOUT ${timeout}
    ENVIRONMENT "PYTHONPATH=${CMAKE_BINARY_DIR}/python;DSRT_BUILD_DIR=${CMAKE_BINARY_DIR};OMP_NUM_THREADS=1")
endfunction()

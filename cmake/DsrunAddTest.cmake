# dsrun_add_test(name SOURCES a.cc ... LIBS lib ... [LABELS unit ...])
# One executable per unit under test, linked against the prebuilt Catch2 main (a CATCH_CONFIG_MAIN TU
# costs ~20 s here), with each TEST_CASE registered in CTest by catch_discover_tests.
include(Catch)
function(dsrun_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE Catch2::Catch2WithMain ${T_LIBS})
  # Tests include their helpers by repository path (tests/common/temp_dir.h); what a test may use of the
  # modules is what it links.
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  dsrun_warnings(${name})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  catch_discover_tests(${name} PROPERTIES LABELS "${T_LABELS}" DISCOVERY_TIMEOUT 60)
endfunction()

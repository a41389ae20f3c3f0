# dsrun_module_includes(TARGET DIR...): what TARGET's sources and its dependents may include of this tree
# is DIR... and nothing else (docs/architecture.md, "Modules").
# Includes name the repository path ("common/error.h"), and exporting the repository root would let every
# target include every module, so that only scripts/check_layering.sh would catch a wrong include. Each
# target exports instead a folder of its own in the build tree holding a link to each DIR: a module can
# include only the modules it links, and a wrong include fails to compile.
function(dsrun_module_includes target)
  set(root ${PROJECT_BINARY_DIR}/module_include/${target})
  foreach(dir ${ARGN})
    get_filename_component(parent ${root}/${dir} DIRECTORY)
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${dir} ${root}/${dir} SYMBOLIC)
  endforeach()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE $<BUILD_INTERFACE:${root}>)
  else()
    target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}>)
  endif()
endfunction()

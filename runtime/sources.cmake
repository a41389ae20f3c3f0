# Sources directly in runtime/ (owned by runtime-core): the strategy seam, distributed init, the engine.
target_sources(dsrt PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/grad_strategy.cc
)

# Until runtime/config/ adds its sources, dsrt_config would be a library without sources, which CMake
# refuses to generate; give it an empty translation unit so the rest of the runtime still builds.
get_target_property(_dsrt_config_sources dsrt_config SOURCES)
if(NOT _dsrt_config_sources)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/dsrt_config_empty.cc "// dsrt_config has no sources yet\n")
  target_sources(dsrt_config PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/dsrt_config_empty.cc)
endif()

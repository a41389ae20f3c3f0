# Man pages generated from each program's --help at build time (help2man), so they never drift from the
# programs. Installed gzip'ed into man1 with the program's component. Needs help2man (scripts/install_deps.sh);
# without it the build says so and installs no man pages.
find_program(DSRUN_HELP2MAN help2man)
if(NOT DSRUN_HELP2MAN)
  message(WARNING "help2man not found (apt-get install help2man): no man pages are built or installed")
  return()
endif()

set(_man_dir ${CMAKE_CURRENT_BINARY_DIR}/man)
file(MAKE_DIRECTORY ${_man_dir})
set(_man_pages)
# dsrun_man_page(PROGRAM COMPONENT "one-line description")
function(dsrun_man_page program component description)
  if(NOT TARGET ${program})
    return()
  endif()
  set(page ${_man_dir}/${program}.1)
  # The sections --help cannot carry (EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES, SEE ALSO) are written by hand
  # in packaging/man/PROGRAM.h2m, help2man's own include format, and merged into the generated page.
  set(include ${PROJECT_SOURCE_DIR}/packaging/man/${program}.h2m)
  add_custom_command(OUTPUT ${page}.gz
    COMMAND ${DSRUN_HELP2MAN} --no-info --no-discard-stderr --version-string=${PROJECT_VERSION}
            --name=${description} --section=1 --source=dsrun --manual=dsrun --include=${include}
            --output=${page} $<TARGET_FILE:${program}>
    COMMAND gzip -9nf ${page}
    DEPENDS ${program} ${include}
    COMMENT "man page ${program}.1 from ${program} --help" VERBATIM)
  install(FILES ${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${component})
  set(_man_pages ${_man_pages} ${page}.gz PARENT_SCOPE)
endfunction()

dsrun_man_page(dsrun launcher "launch multi-node training jobs (a drop-in for DeepSpeed's launcher)")
dsrun_man_page(dsrun-launch launcher "start one node's ranks of a dsrun job (run by dsrun's backends)")
dsrun_man_page(dsrun-agent launcher "per-node daemon that starts ranks for authenticated dsrun launchers")
dsrun_man_page(ds_elastic launcher "compute DeepSpeed elastic batch sizes and GPU counts")
dsrun_man_page(ds_estimate runtime "estimate ZeRO model-state memory per GPU and CPU")
dsrun_man_page(ds_to_fp32 runtime "consolidate a dsrun/ZeRO checkpoint into one fp32 state file")
add_custom_target(dsrun_man_pages ALL DEPENDS ${_man_pages})

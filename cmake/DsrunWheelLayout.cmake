# Install layout of a wheel (`pip install .`, scikit-build-core sets SKBUILD): libdsrt, its headers and
# CMake/pkg-config files inside the dsrt package (as torch keeps its own under torch/), the package at the
# root of site-packages, the programs in the environment's bin/. Outside a wheel, GNU directories apply.
if(NOT SKBUILD)
  return()
endif()
# FORCE: a build folder configured before without pip (scripts/build.sh layouts) must not leak into a wheel.
set(CMAKE_INSTALL_LIBDIR dsrt/lib CACHE PATH "libdsrt inside the dsrt package" FORCE)
set(CMAKE_INSTALL_INCLUDEDIR dsrt/include CACHE PATH "libdsrt's headers inside the dsrt package" FORCE)
set(CMAKE_INSTALL_DATAROOTDIR dsrt/share CACHE PATH "data inside the dsrt package" FORCE)
set(DSRT_PYTHON_INSTALL_DIR . CACHE STRING "the dsrt package at the root of site-packages" FORCE)
set(DSRUN_INSTALL_PROGRAM_DIR ${SKBUILD_SCRIPTS_DIR})

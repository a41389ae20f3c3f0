# CPack: one Debian package per install component (`cpack -G DEB` in the build directory, or
# scripts/make_packages.sh). Depends are computed from the binaries by dpkg-shlibdeps, plus what the
# runtime needs that no binary links: LibTorch's headers and CMake files, nlohmann_json and python3-torch.
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(STATUS "Debian packages want CMAKE_INSTALL_PREFIX=/usr (scripts/build.sh sets it); now ${CMAKE_INSTALL_PREFIX}")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dsrun)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# The Maintainer field; set it to whoever builds the packages for a cluster.
set(DSRUN_DEB_MAINTAINER "dsrun maintainers <dsrun-maintainers@example.org>" CACHE STRING
  "Maintainer of the Debian packages")
set(CPACK_PACKAGE_CONTACT "${DSRUN_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL launcher deepspeed)
if(TARGET dsrt)
  list(APPEND CPACK_COMPONENTS_ALL runtime)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# A shlibs file for libdsrt, so packages built against it get a correct Depends.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)

set(CPACK_DEBIAN_LAUNCHER_PACKAGE_NAME dsrun)
set(CPACK_DEBIAN_LAUNCHER_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_LAUNCHER_DESCRIPTION "multi-node launcher and per-node agent for deep-learning jobs
dsrun starts the ranks of a training job on the hosts of a hostfile through
pdsh, ssh, OpenMPI, MPICH, Intel MPI, MVAPICH, Slurm or its own agent
(dsrun-agent, mutual TLS), with DeepSpeed's command line and environment.
This package holds what every node needs: dsrun, dsrun-launch, dsrun-agent
(with its systemd unit) and ds_elastic. It does not depend on LibTorch.")
set(CPACK_DEBIAN_LAUNCHER_PACKAGE_RECOMMENDS "openssh-client, python3")
set(CPACK_DEBIAN_LAUNCHER_PACKAGE_SUGGESTS "pdsh, openmpi-bin, mpich, slurm-client, dsrun-runtime")

set(CPACK_DEBIAN_DEEPSPEED_PACKAGE_NAME dsrun-deepspeed)
set(CPACK_DEBIAN_DEEPSPEED_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_DEEPSPEED_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_DEEPSPEED_PACKAGE_DEPENDS "dsrun (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_DEEPSPEED_DESCRIPTION "deepspeed command name for dsrun
Job scripts written for DeepSpeed call 'deepspeed [options] train.py'. This
package makes that command run dsrun, which takes DeepSpeed's launcher flags.
It is separate from dsrun so that installing dsrun never puts a 'deepspeed'
command in front of a real DeepSpeed; a DeepSpeed installed with pip in
/usr/local/bin or a virtual environment still comes first on PATH.")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME dsrun-runtime)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "training runtime for LibTorch programs launched by dsrun
libdsrt gives C++ LibTorch programs DeepSpeed's engine: DDP, ZeRO stages 1-3,
ZeRO-Offload with a vectorised CPU Adam, fp16 and bf16, and checkpoints that
reload on another number of ranks. The package holds the library, its
headers, its CMake package (find_package(dsrt)) and pkg-config file,
ds_estimate, ds_to_fp32 and the Python package dsrt.")
# The dsrt extension module is built for one Python minor version (its ABI tag): depend on exactly that.
execute_process(COMMAND ${DSRUN_PYTHON_EXECUTABLE} -c "import sys; print(sys.version_info[0], sys.version_info[1])"
                OUTPUT_VARIABLE _dsrt_py OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(_dsrt_py MATCHES "^([0-9]+) ([0-9]+)$")
  math(EXPR _dsrt_py_next "${CMAKE_MATCH_2} + 1")
  set(_dsrt_python_depends "python3 (>= ${CMAKE_MATCH_1}.${CMAKE_MATCH_2}~), python3 (<< ${CMAKE_MATCH_1}.${_dsrt_py_next}), ")
endif()
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "${_dsrt_python_depends}libtorch-dev, nlohmann-json3-dev, python3-torch")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "dsrun (= ${PROJECT_VERSION}), libopenblas0-pthread")

# Maintainer files: conffiles and systemd hooks for the launcher; copyright and changelog for both.
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/debian/launcher.conffiles.in ${CMAKE_CURRENT_BINARY_DIR}/debian/conffiles @ONLY)
foreach(script postinst prerm postrm)
  file(COPY ${CMAKE_CURRENT_SOURCE_DIR}/debian/launcher.${script} DESTINATION ${CMAKE_CURRENT_BINARY_DIR}/debian/in
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  file(RENAME ${CMAKE_CURRENT_BINARY_DIR}/debian/in/launcher.${script} ${CMAKE_CURRENT_BINARY_DIR}/debian/${script})
endforeach()
set(CPACK_DEBIAN_LAUNCHER_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_BINARY_DIR}/debian/conffiles
  ${CMAKE_CURRENT_BINARY_DIR}/debian/postinst ${CMAKE_CURRENT_BINARY_DIR}/debian/prerm
  ${CMAKE_CURRENT_BINARY_DIR}/debian/postrm)

# The runtime: dpkg's ldconfig trigger instead of the ldconfig calls CPack would write into postinst/postrm
# (its own postinst/postrm replace those).
foreach(file triggers postinst postrm)
  file(COPY ${CMAKE_CURRENT_SOURCE_DIR}/debian/runtime.${file} DESTINATION ${CMAKE_CURRENT_BINARY_DIR}/debian/in
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/debian/runtime)
  file(RENAME ${CMAKE_CURRENT_BINARY_DIR}/debian/in/runtime.${file} ${CMAKE_CURRENT_BINARY_DIR}/debian/runtime/${file})
endforeach()
file(CHMOD ${CMAKE_CURRENT_BINARY_DIR}/debian/runtime/triggers PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_BINARY_DIR}/debian/runtime/triggers
  ${CMAKE_CURRENT_BINARY_DIR}/debian/runtime/postinst ${CMAKE_CURRENT_BINARY_DIR}/debian/runtime/postrm)

string(TIMESTAMP DSRUN_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
foreach(component launcher deepspeed runtime)
  string(TOUPPER ${component} _upper)
  set(DSRUN_DEB_PACKAGE ${CPACK_DEBIAN_${_upper}_PACKAGE_NAME})
  set(_doc ${CMAKE_CURRENT_BINARY_DIR}/debian/doc-${DSRUN_DEB_PACKAGE})
  configure_file(${CMAKE_CURRENT_SOURCE_DIR}/debian/copyright.in ${_doc}/copyright @ONLY)
  # A native package (version without a Debian revision) names its changelog changelog.gz.
  configure_file(${CMAKE_CURRENT_SOURCE_DIR}/debian/changelog.in ${_doc}/changelog @ONLY)
  execute_process(COMMAND gzip -9nf ${_doc}/changelog)
  install(FILES ${_doc}/copyright ${_doc}/changelog.gz
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${DSRUN_DEB_PACKAGE} COMPONENT ${component})
endforeach()

include(CPack)

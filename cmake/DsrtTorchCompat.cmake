# dsrt_torch_compat(target): what a target that includes LibTorch's headers needs from the torch found,
# so one source tree builds against Debian's torch 1.13 and PyPI's torch 2.7+ (docs/runtime.md "Two
# torches"). Call after find_package(Torch).
#  - PyPI's wheels up to torch 2.6 are built with the pre-C++11 library ABI (_GLIBCXX_USE_CXX11_ABI=0, in
#    TORCH_CXX_FLAGS), where std::string is another type: libdsrt's torch-free parts also link Debian's C++
#    libraries (yaml-cpp), built with the C++11 ABI, so one side of the std::string boundary would always be
#    wrong ("undefined reference to dsrt::config::loadConfigFile(std::string const&, int)" at the first link).
#    Such a torch stops the configure with one message instead.
#  - Newer torch headers refuse anything below C++20 ("#error C++20 or later compatible compiler is
#    required to use ATen"): the target (and what links it) then compiles as C++20.
#  - PyPI's torch ships ProcessGroupGloo.hpp but not the <gloo/...> headers it includes; Debian's torch has
#    them from libgloo-dev. Where the torch has none, the few headers it needs come from third_party/gloo
#    (upstream gloo, BSD; only declarations reach libdsrt, which calls torch's compiled Gloo backend).
#  - PyPI's CUDA torch finds its CUDA and NCCL libraries in site-packages/nvidia/*/lib through $ORIGIN run
#    paths, which the linker does not follow when it links a program: it would take the system's libnccl (an
#    older one from the CUDA toolkit: "libtorch_cuda.so: undefined reference to ncclCommGrow"). Those
#    directories go to -rpath-link of everything that links libdsrt.
include(${CMAKE_CURRENT_LIST_DIR}/DsrtTorchHeaders.cmake)

function(dsrt_torch_compat target)
  if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
    message(FATAL_ERROR "libdsrt: the torch ${Torch_VERSION} in ${TORCH_INSTALL_PREFIX} is built with the "
      "pre-C++11 library ABI (_GLIBCXX_USE_CXX11_ABI=0: PyPI's wheels up to 2.6), which cannot share std::string "
      "with the system's C++ libraries libdsrt links. Use torch 2.7 or later (pip install 'torch>=2.7') or "
      "Debian's python3-torch (docs/runtime.md \"Two torches\").")
  endif()
  dsrt_torch_header_dir(_aten_dir "ATen/ATen.h")
  if(_aten_dir)
    file(STRINGS "${_aten_dir}/ATen/ATen.h" _needs_cxx20 REGEX "C\\+\\+20 or later")
    if(_needs_cxx20)
      target_compile_features(${target} PUBLIC cxx_std_20)
    endif()
  endif()

  file(GLOB _wheel_lib_dirs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
  foreach(dir IN LISTS _wheel_lib_dirs)
    if(IS_DIRECTORY "${dir}")
      get_filename_component(dir "${dir}" REALPATH)
      target_link_options(${target} PUBLIC "$<BUILD_INTERFACE:LINKER:-rpath-link,${dir}>")
    endif()
  endforeach()

  dsrt_torch_header_dir(_gloo_dir "gloo/algorithm.h")
  if(NOT _gloo_dir AND Torch_VERSION VERSION_GREATER_EQUAL 2)
    target_include_directories(${target} SYSTEM PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/third_party/gloo/include>)
  endif()
endfunction()

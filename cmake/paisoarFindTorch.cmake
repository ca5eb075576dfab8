# paisoarFindTorch.cmake: finds the LibTorch that paisoar builds against, the
# one inside a Python environment's torch wheel, and checks that its version is
# in the supported range. Used by the project's own CMakeLists.txt and by the
# installed paisoarConfig.cmake, so a user's project finds the same LibTorch.
#
# Inputs (cache variables or -D):
#   PAISOAR_PYTHON  the Python whose `import torch` to use; default: $PAISOAR_VENV's
#                   (the venv scripts/setup.sh made there), else the project's
#                   .venv/bin/python when there is one, else python3.
#   Torch_DIR       a LibTorch's share/cmake/Torch (skips asking Python).
# Outputs: the targets of find_package(Torch); PAISOAR_TORCH_VERSION;
#   PAISOAR_TORCH_HAS_CUDA (ON for a CUDA build of LibTorch);
#   PAISOAR_CUDA_WHEEL_INCLUDE_DIRS (the nvidia-* wheels' headers, CUDA only);
#   PAISOAR_TORCH_LIBRARY_DIR (libtorch*.so and libc10*.so, for RPATHs).
#
# A CUDA wheel's TorchConfig.cmake stops unless it finds a CUDA toolkit (nvcc
# and its headers) and cuDNN's headers, though no GPU is needed to compile:
# nvcc is looked for in $CUDA_HOME, /usr/local/cuda and on PATH; cuDNN's
# headers in the nvidia-cudnn wheel beside torch.

# The range paisoar is built and tested against (major.minor, inclusive).
set(PAISOAR_TORCH_MIN_VERSION 2.4)
set(PAISOAR_TORCH_MAX_VERSION 2.14)

macro(paisoar_find_torch)
  if(NOT Torch_DIR)
    if(NOT PAISOAR_PYTHON)
      set(_paisoar_default_python python3)
      if(DEFINED ENV{PAISOAR_VENV} AND EXISTS "$ENV{PAISOAR_VENV}/bin/python")
        set(_paisoar_default_python "$ENV{PAISOAR_VENV}/bin/python")  # scripts/setup.sh's venv, when moved
      elseif(DEFINED PROJECT_SOURCE_DIR AND EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python")
        set(_paisoar_default_python "${PROJECT_SOURCE_DIR}/.venv/bin/python")
      endif()
      set(PAISOAR_PYTHON "${_paisoar_default_python}" CACHE FILEPATH
          "Python whose torch (LibTorch) paisoar builds against")
    endif()
    execute_process(
      COMMAND "${PAISOAR_PYTHON}" -c
        "import torch, os; print(torch.utils.cmake_prefix_path); print(torch.__version__); print(torch.version.cuda or '')"
      OUTPUT_VARIABLE _paisoar_torch_out ERROR_VARIABLE _paisoar_torch_err
      RESULT_VARIABLE _paisoar_torch_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT _paisoar_torch_rc EQUAL 0)
      message(FATAL_ERROR
        "paisoar: '${PAISOAR_PYTHON}' cannot import torch:\n${_paisoar_torch_err}\n"
        "Run scripts/setup.sh (it makes .venv with the pinned torch), or pass "
        "-DPAISOAR_PYTHON=<a python with torch ${PAISOAR_TORCH_MIN_VERSION} to "
        "${PAISOAR_TORCH_MAX_VERSION}> or -DTorch_DIR=<libtorch>/share/cmake/Torch.")
    endif()
    string(REPLACE "\n" ";" _paisoar_torch_out "${_paisoar_torch_out}")
    list(GET _paisoar_torch_out 0 _paisoar_torch_prefix)
    set(Torch_DIR "${_paisoar_torch_prefix}/Torch" CACHE PATH "LibTorch's CMake config" FORCE)
  endif()

  # The version, read before find_package(Torch) so that an old or too new
  # LibTorch stops here with its version named, not deep in its own config.
  set(PACKAGE_FIND_VERSION 0)
  include("${Torch_DIR}/TorchConfigVersion.cmake" OPTIONAL RESULT_VARIABLE _paisoar_has_version)
  if(NOT _paisoar_has_version)
    message(FATAL_ERROR "paisoar: ${Torch_DIR} has no TorchConfigVersion.cmake: "
                        "point Torch_DIR at a LibTorch's share/cmake/Torch")
  endif()
  set(PAISOAR_TORCH_VERSION "${PACKAGE_VERSION}")
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _paisoar_torch_mm "${PAISOAR_TORCH_VERSION}")
  if(_paisoar_torch_mm VERSION_LESS PAISOAR_TORCH_MIN_VERSION OR
     _paisoar_torch_mm VERSION_GREATER PAISOAR_TORCH_MAX_VERSION)
    message(FATAL_ERROR
      "paisoar: LibTorch ${PAISOAR_TORCH_VERSION} (${Torch_DIR}) is outside the supported "
      "range ${PAISOAR_TORCH_MIN_VERSION} to ${PAISOAR_TORCH_MAX_VERSION}. Install a torch "
      "in that range (scripts/setup.sh pins the tested one) and point PAISOAR_PYTHON or Torch_DIR at it.")
  endif()

  # A CUDA LibTorch (its Caffe2Config enables CUDA): help it find the toolkit
  # and cuDNN without a GPU.
  file(READ "${Torch_DIR}/../Caffe2/Caffe2Config.cmake" _paisoar_caffe2_config)
  string(FIND "${_paisoar_caffe2_config}" "set(CAFFE2_USE_CUDA 1)" _paisoar_cuda_at)
  set(PAISOAR_TORCH_HAS_CUDA OFF)
  if(NOT _paisoar_cuda_at EQUAL -1)
    set(PAISOAR_TORCH_HAS_CUDA ON)
    if(NOT CMAKE_CUDA_COMPILER)
      find_program(_paisoar_nvcc nvcc HINTS "$ENV{CUDA_HOME}/bin" /usr/local/cuda/bin)
      if(NOT _paisoar_nvcc)
        message(FATAL_ERROR
          "paisoar: LibTorch ${PAISOAR_TORCH_VERSION} is a CUDA build, and its CMake config "
          "needs a CUDA toolkit (nvcc and headers; no GPU) to configure. Install nvcc (set "
          "CUDA_HOME), or build against a CPU torch (e.g. pip install torch==2.13.0).")
      endif()
      get_filename_component(_paisoar_nvcc "${_paisoar_nvcc}" REALPATH)
      set(CMAKE_CUDA_COMPILER "${_paisoar_nvcc}" CACHE FILEPATH "nvcc")
    endif()
    if(NOT CUDA_TOOLKIT_ROOT_DIR)
      get_filename_component(_paisoar_cuda_root "${CMAKE_CUDA_COMPILER}" DIRECTORY)
      get_filename_component(_paisoar_cuda_root "${_paisoar_cuda_root}" DIRECTORY)
      set(CUDA_TOOLKIT_ROOT_DIR "${_paisoar_cuda_root}" CACHE PATH "CUDA toolkit")
    endif()
    # The wheel's site-packages: <site>/torch/share/cmake/Torch.
    get_filename_component(_paisoar_site "${Torch_DIR}/../../../.." ABSOLUTE)
    if(NOT CUDNN_INCLUDE_PATH AND EXISTS "${_paisoar_site}/nvidia/cudnn/include/cudnn.h")
      set(CUDNN_INCLUDE_PATH "${_paisoar_site}/nvidia/cudnn/include" CACHE PATH "cuDNN headers")
    endif()
    # Headers the CUDA parts of LibTorch's headers include (cusparse.h, nccl.h,
    # ...) that a minimal toolkit lacks: the nvidia-* wheels carry them.
    file(GLOB PAISOAR_CUDA_WHEEL_INCLUDE_DIRS LIST_DIRECTORIES true "${_paisoar_site}/nvidia/*/include")
    if(NOT CUDA_nvrtc_LIBRARY)
      file(GLOB _paisoar_nvrtc "${_paisoar_site}/nvidia/cu*/lib/libnvrtc.so.*"
                               "${CUDA_TOOLKIT_ROOT_DIR}/lib*/libnvrtc.so*")
      if(_paisoar_nvrtc)
        list(GET _paisoar_nvrtc 0 _paisoar_nvrtc)
        set(CUDA_nvrtc_LIBRARY "${_paisoar_nvrtc}" CACHE FILEPATH "NVRTC")
      endif()
    endif()
    # Build device code for one architecture, not for all of them (9.0: H100/H200).
    if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
      set(ENV{TORCH_CUDA_ARCH_LIST} "9.0")
    endif()
  endif()

  find_package(Torch REQUIRED)
  get_filename_component(PAISOAR_TORCH_LIBRARY_DIR "${Torch_DIR}/../../../lib" ABSOLUTE)
endmacro()

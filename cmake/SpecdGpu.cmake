# GPU toolchain detection for the CUDA and HIP backend plugins (plugins/cuda, plugins/hip).
#
# SPECD_WITH_CUDA / SPECD_WITH_HIP (top-level cache STRINGs): ON = build or fail, OFF = skip,
# AUTO = build when the toolchain is found. Each plugin's CMakeLists.txt calls the matching
# macro and builds only if SPECD_CUDA_FOUND / SPECD_HIP_FOUND is ON. Macros, not functions:
# enable_language() must run at directory scope.

set(SPECD_CUDA_ARCHITECTURES "90" CACHE STRING
    "CUDA architectures of the CUDA backend (few: each one adds compile time)")
set(SPECD_HIP_ARCHITECTURES "gfx90a" CACHE STRING
    "AMD GPU targets of the HIP backend (--offload-arch; Debian's hipcc 5.2 has gfx900..gfx1030)")

# Normalises ${var} to ON, OFF or AUTO in ${var}_MODE.
function(specd_gpu_mode var)
  string(TOUPPER "${${var}}" v)
  if(v MATCHES "^(ON|YES|TRUE|Y|1)$")
    set(v ON)
  elseif(v MATCHES "^(OFF|NO|FALSE|N|0)$")
    set(v OFF)
  elseif(NOT v STREQUAL "AUTO")
    message(FATAL_ERROR "${var} must be ON, OFF or AUTO, not '${${var}}'")
  endif()
  set(${var}_MODE ${v} PARENT_SCOPE)
endfunction()

# Reports a toolchain that was not found: an error when the option is ON, a note for AUTO.
function(specd_gpu_missing var what why)
  if(${var}_MODE STREQUAL "ON")
    message(FATAL_ERROR "${var}=ON but ${what} cannot be built: ${why}")
  endif()
  message(STATUS "${what}: skipped (${why}; set ${var}=ON to require it)")
endfunction()

# Sets SPECD_CUDA_FOUND. Finds nvcc (CMAKE_CUDA_COMPILER, $CUDACXX, PATH, $CUDA_PATH or
# /usr/local/cuda), checks that it works (check_language compiles a test project), enables the
# CUDA language and finds cudart_static and cuBLAS.
macro(specd_detect_cuda)
  set(SPECD_CUDA_FOUND OFF)
  specd_gpu_mode(SPECD_WITH_CUDA)
  if(SPECD_WITH_CUDA_MODE STREQUAL "OFF")
    message(STATUS "CUDA backend: off (SPECD_WITH_CUDA=OFF)")
  else()
    if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
      find_program(SPECD_NVCC nvcc HINTS ENV CUDA_PATH PATH_SUFFIXES bin
                   PATHS /usr/local/cuda/bin)
      if(SPECD_NVCC)
        set(ENV{CUDACXX} "${SPECD_NVCC}")  # read by check_language's test project
      endif()
    endif()
    include(CheckLanguage)
    check_language(CUDA)
    if(NOT CMAKE_CUDA_COMPILER)
      specd_gpu_missing(SPECD_WITH_CUDA "CUDA backend" "no working nvcc found")
    else()
      enable_language(CUDA)
      find_package(CUDAToolkit QUIET)
      if(NOT TARGET CUDA::cudart_static OR NOT TARGET CUDA::cublas)
        specd_gpu_missing(SPECD_WITH_CUDA "CUDA backend"
                          "nvcc found but not the CUDA runtime (static) or cuBLAS")
      else()
        set(SPECD_CUDA_FOUND ON)
        message(STATUS "CUDA backend: ${CMAKE_CUDA_COMPILER} "
                       "(${CMAKE_CUDA_COMPILER_VERSION}), sm ${SPECD_CUDA_ARCHITECTURES}")
      endif()
    endif()
  endif()
endmacro()

# Sets SPECD_HIP_FOUND, SPECD_HIPCC, SPECD_AMDHIP64_LIBRARY. CMake's HIP language expects a
# full ROCm install; Debian's hipcc 5.2 (packages hipcc, libamdhip64-dev) is driven directly
# through custom commands instead (specd_hip_objects).
macro(specd_detect_hip)
  set(SPECD_HIP_FOUND OFF)
  specd_gpu_mode(SPECD_WITH_HIP)
  if(SPECD_WITH_HIP_MODE STREQUAL "OFF")
    message(STATUS "HIP backend: off (SPECD_WITH_HIP=OFF)")
  else()
    find_program(SPECD_HIPCC hipcc HINTS ENV ROCM_PATH PATH_SUFFIXES bin PATHS /opt/rocm/bin)
    find_library(SPECD_AMDHIP64_LIBRARY amdhip64 HINTS ENV ROCM_PATH PATH_SUFFIXES lib
                 PATHS /opt/rocm/lib)
    find_path(SPECD_HIP_INCLUDE_DIR hip/hip_runtime_api.h HINTS ENV ROCM_PATH
              PATH_SUFFIXES include PATHS /opt/rocm/include)
    if(NOT SPECD_HIPCC)
      specd_gpu_missing(SPECD_WITH_HIP "HIP backend" "hipcc not found")
    elseif(NOT SPECD_AMDHIP64_LIBRARY OR NOT SPECD_HIP_INCLUDE_DIR)
      specd_gpu_missing(SPECD_WITH_HIP "HIP backend"
                        "hipcc found but not libamdhip64 and its headers (libamdhip64-dev)")
    else()
      set(SPECD_HIP_FOUND ON)
      message(STATUS "HIP backend: ${SPECD_HIPCC}, ${SPECD_HIP_ARCHITECTURES}")
    endif()
  endif()
endmacro()

# specd_hip_objects(<out_var> <source>... [FLAGS <flag>...] [DEPENDS <file>...])
# Compiles each HIP source to an object with hipcc (one --offload-arch per target, always:
# without one hipcc probes the machine's GPUs) and returns the object paths.
function(specd_hip_objects out_var)
  cmake_parse_arguments(H "" "" "FLAGS;DEPENDS" ${ARGN})
  set(arch_flags)
  foreach(arch ${SPECD_HIP_ARCHITECTURES})
    list(APPEND arch_flags --offload-arch=${arch})
  endforeach()
  set(opt -O3)
  if(CMAKE_BUILD_TYPE STREQUAL "Debug")
    set(opt -O0 -g)
  endif()
  set(objects)
  foreach(src ${H_UNPARSED_ARGUMENTS})
    get_filename_component(abs ${src} ABSOLUTE)
    get_filename_component(name ${src} NAME)
    set(obj ${CMAKE_CURRENT_BINARY_DIR}/${name}.o)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${SPECD_HIPCC} ${arch_flags} ${opt} -fPIC -std=c++17 ${H_FLAGS} -c ${abs} -o ${obj}
      DEPENDS ${abs} ${H_DEPENDS}
      COMMENT "hipcc ${name}"
      VERBATIM)
    list(APPEND objects ${obj})
  endforeach()
  set(${out_var} ${objects} PARENT_SCOPE)
endfunction()

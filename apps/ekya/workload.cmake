# ekya_workload: Fashion-MNIST streams with drift, the MLP (CPU; CUDA when nvcc exists
# and a GPU is found at run time), retraining/inference configurations, the
# micro-profiler and `ekya profile`. Included from apps/ekya/CMakeLists.txt.
# Optional CUDA backend. ESCHER_EKYA_CUDA=ON (default) builds mlp_cuda.cu when nvcc is
# found; the GPU is still only used when one is present at run time.
option(ESCHER_EKYA_CUDA "Build the Ekya MLP's CUDA backend when nvcc is available" ON)
set(EKYA_HAVE_CUDA OFF)
if(ESCHER_EKYA_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(EKYA_HAVE_CUDA ON)
    endif()
  endif()
endif()
# (CUDA is detected first: targets pick up CMAKE_CUDA_ARCHITECTURES when created.)
set(EKYA_WL_SOURCES idx.c stream.c mlp.c train.c config.c curvefit.c
  profiler.c retrain.c workload.c profile_cmd.c)
add_library(ekya_workload STATIC ${EKYA_WL_SOURCES})
target_include_directories(ekya_workload PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
target_link_libraries(ekya_workload PUBLIC m PkgConfig::ZLIB)
set_target_properties(ekya_workload PROPERTIES POSITION_INDEPENDENT_CODE ON)
# Training dominates every profile run: -O3 lets gcc vectorise the axpy loops (the -O2
# cost model of RelWithDebInfo leaves most of them scalar). Sanitizer builds keep it.
set_source_files_properties(mlp.c train.c PROPERTIES COMPILE_OPTIONS "-O3")

# ekya_cpu: the reader, the MLP and its training without the CUDA backend (the stub), for
# code that must load on any node: a task library linking ekya_workload would need the
# CUDA runtime (and the C++ one nvcc's host code uses) wherever it is loaded. Cilantro's
# live tenants (apps/cilantro/live) train this MLP.
add_library(ekya_cpu STATIC idx.c mlp.c train.c mlp_cuda_stub.c)
target_include_directories(ekya_cpu PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
target_link_libraries(ekya_cpu PUBLIC m PkgConfig::ZLIB)
set_target_properties(ekya_cpu PROPERTIES POSITION_INDEPENDENT_CODE ON)

if(EKYA_HAVE_CUDA)
  add_library(ekya_cuda OBJECT mlp_cuda.cu)
  # The repository's C warnings (-Wall -Wextra -Werror) and sanitizer flags are gcc
  # options nvcc rejects: drop the inherited ones and pass warnings to the host compiler.
  set_property(TARGET ekya_cuda PROPERTY COMPILE_OPTIONS "")
  target_compile_options(ekya_cuda PRIVATE -Xcompiler=-Wall,-Wextra)
  target_include_directories(ekya_cuda PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include)
  set_target_properties(ekya_cuda PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_sources(ekya_workload PRIVATE $<TARGET_OBJECTS:ekya_cuda>)
  target_link_libraries(ekya_workload PUBLIC CUDA::cudart)
  message(STATUS "ekya: CUDA backend built (${CMAKE_CUDA_COMPILER})")
else()
  target_sources(ekya_workload PRIVATE mlp_cuda_stub.c)
  message(STATUS "ekya: CUDA backend not built (CPU only)")
endif()

function(ekya_wl_test name timeout)
  add_executable(test_ekya_${name} tests/test_${name}.c)
  target_link_libraries(test_ekya_${name} PRIVATE ekya_workload PkgConfig::CMOCKA)
  add_test(NAME unit.ekya_${name} COMMAND test_ekya_${name})
  set_tests_properties(unit.ekya_${name} PROPERTIES TIMEOUT ${timeout})
endfunction()
ekya_wl_test(idx 60)
ekya_wl_test(stream 60)
ekya_wl_test(mlp 180)
ekya_wl_test(curvefit 60)
ekya_wl_test(profiler 180)


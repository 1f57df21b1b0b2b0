# Cilantro live on escher (docs/cilantro.md, "Live runs"): `cilantro serve` (the
# controller, in the cilantro command), `cilantro-tenant` (a tenant's entrypoint, run as
# an escher job; it reads Fashion-MNIST with Ekya's reader) and the tenants' task library,
# which escher-worker loads, so it links no escher library; it links Ekya's MLP for the
# throughput tenants' training (ekya_cpu: static, position-independent, no CUDA, so the
# library loads on any node).
# The library sits alone in cilantro-live/ next to the cilantro binary: that directory is
# each tenant job's package.
set(CIL_LIVE_DIR ${CMAKE_CURRENT_SOURCE_DIR}/live)
target_sources(cilantro-cli PRIVATE ${CIL_LIVE_DIR}/serve.c)
target_include_directories(cilantro-cli PRIVATE ${CIL_LIVE_DIR})
target_compile_definitions(cilantro-cli PRIVATE CILANTRO_HAVE_LIVE)
target_link_libraries(cilantro-cli PRIVATE escher Threads::Threads)

add_executable(cilantro-tenant ${CIL_LIVE_DIR}/tenant.c)
target_link_libraries(cilantro-tenant PRIVATE cilantro ekya_cpu escher Threads::Threads)

add_library(cilantro_live SHARED ${CIL_LIVE_DIR}/tasks.c)
target_include_directories(cilantro_live PRIVATE ${PROJECT_SOURCE_DIR}/client/include)
target_link_libraries(cilantro_live PRIVATE ekya_cpu)
set_target_properties(cilantro_live PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/cilantro-live)
add_dependencies(cilantro-cli cilantro-tenant cilantro_live)

# ekya_sched: profiles, decisions, the executor-agnostic driver, the simulator, the
# thief scheduler and baselines; and the `ekya` command. Plain C11, libm, jansson.
set(EKYA_SCHED_DIR ${CMAKE_CURRENT_SOURCE_DIR})
set(EKYA_SCHED_SOURCES csv profiles infer decision pick thief baselines drive sim synth)
list(TRANSFORM EKYA_SCHED_SOURCES PREPEND ${EKYA_SCHED_DIR}/)
list(TRANSFORM EKYA_SCHED_SOURCES APPEND .c)
add_library(ekya_sched STATIC ${EKYA_SCHED_SOURCES})
target_include_directories(ekya_sched PUBLIC ${EKYA_SCHED_DIR}/include)
target_link_libraries(ekya_sched PUBLIC m PkgConfig::JANSSON)
set_target_properties(ekya_sched PROPERTIES POSITION_INDEPENDENT_CODE ON)

# The command joins both layers: `profile` and `run` use the workload layer.
add_executable(ekya ${EKYA_SCHED_DIR}/main.c ${EKYA_SCHED_DIR}/cli.c
  ${EKYA_SCHED_DIR}/simulate_cmd.c ${EKYA_SCHED_DIR}/plot_cmd.c ${EKYA_SCHED_DIR}/synth_cmd.c
  ${EKYA_SCHED_DIR}/run_cmd.c ${EKYA_SCHED_DIR}/live.c ${EKYA_SCHED_DIR}/live_wire.c)
target_link_libraries(ekya PRIVATE ekya_sched ekya_workload escher Threads::Threads)

# The code a live run (`ekya run --cluster`) runs on the nodes: a task library that
# escher-worker loads, so it links no escher library (the worker provides the SDK). It
# sits alone in ekya-live/ next to the ekya binary: that directory is the job's package.
add_library(ekya_live SHARED ${EKYA_SCHED_DIR}/live_tasks.c ${EKYA_SCHED_DIR}/live_wire.c)
target_include_directories(ekya_live PRIVATE ${PROJECT_SOURCE_DIR}/client/include)
target_link_libraries(ekya_live PRIVATE ekya_workload Threads::Threads)
set_target_properties(ekya_live PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/ekya-live)
add_dependencies(ekya ekya_live)

set(EKYA_SCHED_DATA ${EKYA_SCHED_DIR}/data)
foreach(t profiles thief sim toy)
  add_executable(test_ekya_${t} ${EKYA_SCHED_DIR}/tests/test_${t}.c)
  target_link_libraries(test_ekya_${t} PRIVATE ekya_sched PkgConfig::CMOCKA PkgConfig::JANSSON)
  target_compile_definitions(test_ekya_${t} PRIVATE EKYA_DATA_DIR="${EKYA_SCHED_DATA}")
  add_test(NAME unit.ekya_${t} COMMAND test_ekya_${t})
  set_tests_properties(unit.ekya_${t} PROPERTIES TIMEOUT 60)
endforeach()

# The command line: bad inputs give one-line errors and non-zero exits; JSON keys.
add_test(NAME unit.ekya_cli
  COMMAND bash ${EKYA_SCHED_DIR}/tests/cli_test.sh $<TARGET_FILE:ekya> ${EKYA_SCHED_DATA})
set_tests_properties(unit.ekya_cli PROPERTIES TIMEOUT 60)

# `ekya run`: the real workload end to end (both layers).
add_test(NAME unit.ekya_run COMMAND bash ${EKYA_SCHED_DIR}/tests/run_test.sh $<TARGET_FILE:ekya>)
set_tests_properties(unit.ekya_run PROPERTIES TIMEOUT 300)

# microservices (item 7 of the Cilantro issue): the hotel-reservation latency model
# (micro.c), the Gaussian-process learner (gp.c), the UCB policy and its baselines
# (micro_policy.c) and the runs behind `cilantro micro` (micro_run.c).
# Docs: docs/cilantro_micro.md.
target_sources(cilantro PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/gp.c
  ${CMAKE_CURRENT_LIST_DIR}/micro.c
  ${CMAKE_CURRENT_LIST_DIR}/micro_policy.c
  ${CMAKE_CURRENT_LIST_DIR}/micro_run.c)

foreach(t gp micro)
  add_executable(test_cilantro_${t} ${CMAKE_CURRENT_LIST_DIR}/tests/test_${t}.c)
  target_link_libraries(test_cilantro_${t} PRIVATE cilantro PkgConfig::CMOCKA)
  add_test(NAME unit.cilantro_${t} COMMAND test_cilantro_${t})
  set_tests_properties(unit.cilantro_${t} PROPERTIES TIMEOUT 180)
endforeach()

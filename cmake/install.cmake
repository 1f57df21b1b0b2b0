# install.cmake: what `cmake --install` (and `make install`, `make package`) puts where.
# Included at the end of the top CMakeLists.txt, once every target exists. docs/deploy.md,
# "Installing the SDK", describes the layout and how the programs find each other.
include(CMakePackageConfigHelpers)

# Installing and packaging do not build: `make install` and `make package` at the top
# (Makefile) build first, and cmake --install never does. Without this, cpack's
# "preinstall" step checks the whole tree, tests and benchmarks included (tens of
# seconds on a busy machine), which test_install_deb.sh would pay at every run.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

# Programs: all in bin/. The CLI finds escher-gcs and escher-raylet next to itself, the
# raylet finds escher-worker next to itself, the worker finds the CLI next to itself and
# libescher.so in ../<libdir> (raylet/worker_main.c); escher-gang-ghost is run by name,
# from the PATH of the daemons (bin/ on PATH: /usr/bin for the .deb).
install(TARGETS escher-cli escher-gcs escher-raylet escher-worker escher-gang-ghost
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The dashboard's page (plain HTML/CSS/JS, nothing built): escher-gcs finds it at
# <bindir>/../share/escher/dashboard (gcs/CMakeLists.txt, docs/observability.md).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/dashboard/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/escher/dashboard)

# Man pages, one per program, generated from its --help and --version by help2man
# (Debian's help2man; without it, or in a sanitized build whose programs would report
# at exit, none are made and none installed).
find_program(HELP2MAN help2man)
if(HELP2MAN AND NOT ESCHER_SANITIZED)
  set(ESCHER_MAN_PAGES
    "escher-cli|escher|the escher cluster runtime's command line"
    "escher-gcs|escher-gcs|the escher global control store"
    "escher-raylet|escher-raylet|the escher node agent"
    "escher-worker|escher-worker|runs tasks for escher-raylet"
    "escher-gang-ghost|escher-gang-ghost|a ghost task of an escher gang reservation")
  set(ESCHER_MAN_FILES)
  foreach(entry IN LISTS ESCHER_MAN_PAGES)
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 target)
    list(GET parts 1 name)
    list(GET parts 2 what)
    set(page ${PROJECT_BINARY_DIR}/man/${name}.1)
    add_custom_command(OUTPUT ${page}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
      COMMAND ${HELP2MAN} -N --no-discard-stderr -n "${what}" -o ${page} $<TARGET_FILE:${target}>
      DEPENDS ${target} VERBATIM)
    list(APPEND ESCHER_MAN_FILES ${page})
  endforeach()
  add_custom_target(man ALL DEPENDS ${ESCHER_MAN_FILES})
  install(FILES ${ESCHER_MAN_FILES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()

# The SDK: libescher.so.<version> with its soname and development links, libescher.a
# (self-contained but for the system libraries), the public headers.
install(TARGETS escher_shared escher_sdk_static EXPORT escherTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES
  ${PROJECT_SOURCE_DIR}/client/include/escher/escher.h
  ${PROJECT_SOURCE_DIR}/client/include/escher/esl.h
  ${PROJECT_SOURCE_DIR}/client/include/escher/jobs.h
  ${PROJECT_SOURCE_DIR}/client/include/escher/status.h
  ${PROJECT_SOURCE_DIR}/client/include/escher/task.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/escher)

# pkg-config: relocatable (prefix from the .pc file's own place), so one escher.pc serves
# `cmake --install --prefix P`, make install PREFIX=P and the .deb alike.
# Libs.private rather than Requires.private: pkg-config would add the Cflags of required
# modules (hiredis's -D_FILE_OFFSET_BITS=64 among them) to every user's compilation, and
# would need their -dev packages even for a dynamic link.
file(RELATIVE_PATH ESCHER_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" ESCHER_PC_TO_PREFIX "${ESCHER_PC_TO_PREFIX}")
list(TRANSFORM ESCHER_STATIC_DEPS PREPEND "-l" OUTPUT_VARIABLE ESCHER_PC_LIBS_PRIVATE)
list(JOIN ESCHER_PC_LIBS_PRIVATE " " ESCHER_PC_LIBS_PRIVATE)
configure_file(${CMAKE_CURRENT_LIST_DIR}/escher.pc.in ${PROJECT_BINARY_DIR}/escher.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/escher.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# CMake: find_package(escher CONFIG) gives escher::escher (libescher.so) and
# escher::escher_static (libescher.a with its system libraries).
set(ESCHER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/escher)
install(EXPORT escherTargets NAMESPACE escher:: DESTINATION ${ESCHER_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/escherConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/escherConfig.cmake
  ${PROJECT_BINARY_DIR}/escherConfigVersion.cmake DESTINATION ${ESCHER_CMAKE_DIR})

# make package: one .deb, "escher", installing under /usr. Dependencies from the
# binaries (dpkg-shlibdeps); the development files (headers, libescher.a, escher.pc, the
# CMake package) are in the same package.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME escher)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "escher")
set(CPACK_PACKAGE_CONTACT "escher maintainers <escher@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "escher cluster runtime: GCS, raylet, worker, CLI and the C SDK (libescher)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
# A shlibs file and the ldconfig trigger, for libescher.so.0.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
include(CPack)

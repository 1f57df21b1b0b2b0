# escherConfig.cmake: find_package(escher CONFIG) for an installed escher (docs/deploy.md).
#   escher::escher         libescher.so (the usual choice)
#   escher::escher_static  libescher.a; links the system libraries it needs by name
include(CMakeFindDependencyMacro)
find_dependency(Threads)
include("${CMAKE_CURRENT_LIST_DIR}/escherTargets.cmake")

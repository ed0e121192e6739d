# Install rules: the `ablate` binary, libablate (core), the public plugin headers, the built-in
# plugins (installed by ablate_add_plugin(... INSTALL)) and the CMake package that lets an
# out-of-tree plugin build with find_package(Ablate) + ablate_add_plugin().
include(CMakePackageConfigHelpers)

set(ABLATE_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/Ablate")

install(TARGETS ablate RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ablate_core ablate_plugin_sdk EXPORT AblateTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY framework/include/ablate DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT AblateTargets NAMESPACE Ablate:: DESTINATION ${ABLATE_CMAKE_INSTALL_DIR})

configure_package_config_file(cmake/AblateConfig.cmake.in
  "${PROJECT_BINARY_DIR}/AblateConfig.cmake"
  INSTALL_DESTINATION ${ABLATE_CMAKE_INSTALL_DIR}
  PATH_VARS ABLATE_PLUGIN_INSTALL_DIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/AblateConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/AblateConfig.cmake"
  "${PROJECT_BINARY_DIR}/AblateConfigVersion.cmake"
  cmake/AblatePlugin.cmake
  DESTINATION ${ABLATE_CMAKE_INSTALL_DIR})

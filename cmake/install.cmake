# Installs libpaisoar, its headers and a paisoarConfig.cmake so that a user's
# project can `find_package(paisoar)` and link `paisoar::paisoar`.
include(CMakePackageConfigHelpers)

install(TARGETS paisoar EXPORT paisoarTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/paisoar
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/paisoar/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/paisoar)
install(EXPORT paisoarTargets NAMESPACE paisoar::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/paisoar)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/paisoarConfig.cmake.in
  ${PROJECT_BINARY_DIR}/paisoarConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/paisoar)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/paisoarConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/paisoarConfig.cmake
              ${PROJECT_SOURCE_DIR}/cmake/paisoarFindTorch.cmake
              ${PROJECT_BINARY_DIR}/paisoarConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/paisoar)

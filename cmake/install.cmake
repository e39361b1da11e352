# install(): headers, libraries, a CMake package (find_package(coccl)) and coccl.pc.
include(CMakePackageConfigHelpers)

install(FILES ${PROJECT_SOURCE_DIR}/include/coccl.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS coccl EXPORT cocclTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT cocclTargets NAMESPACE coccl:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/coccl)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/cocclConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cocclConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/coccl)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cocclConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cocclConfig.cmake ${PROJECT_BINARY_DIR}/cocclConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/coccl)

configure_file(${PROJECT_SOURCE_DIR}/cmake/coccl.pc.in ${PROJECT_BINARY_DIR}/coccl.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/coccl.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

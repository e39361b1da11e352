# install(): headers, libraries, a CMake package (find_package(coccl)) and the pkg-config files
# coccl.pc (link libcoccl) and coccl-codec.pc (the codec plug-in SDK: headers only).
include(CMakePackageConfigHelpers)

install(FILES ${PROJECT_SOURCE_DIR}/include/coccl.h ${PROJECT_SOURCE_DIR}/include/coccl_query.h
              ${PROJECT_SOURCE_DIR}/include/coccl_codec.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS coccl EXPORT cocclTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# coccl::codec_sdk: the codec plug-in ABI (coccl.h, coccl_codec.h) without linking libcoccl; a
# plug-in is loaded into a process that has libcoccl already (docs/codec-plugins.md).
add_library(coccl_codec_sdk INTERFACE)
target_include_directories(coccl_codec_sdk INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(coccl_codec_sdk PROPERTIES EXPORT_NAME codec_sdk)
add_library(coccl::codec_sdk ALIAS coccl_codec_sdk)
install(TARGETS coccl_codec_sdk EXPORT cocclTargets)

install(EXPORT cocclTargets NAMESPACE coccl:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/coccl)

# Where plug-ins go, relative to the install prefix: the loader looks for libcoccl-codec-NAME.so
# beside libcoccl.so and in its coccl/ subfolder (src/codecs/abi/loader.cc).
set(COCCL_CODEC_PLUGIN_INSTALL_SUBDIR ${CMAKE_INSTALL_LIBDIR}/coccl)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/cocclConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cocclConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/coccl
  PATH_VARS COCCL_CODEC_PLUGIN_INSTALL_SUBDIR CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cocclConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cocclConfig.cmake ${PROJECT_BINARY_DIR}/cocclConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/coccl)

configure_file(${PROJECT_SOURCE_DIR}/cmake/coccl.pc.in ${PROJECT_BINARY_DIR}/coccl.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/coccl-codec.pc.in ${PROJECT_BINARY_DIR}/coccl-codec.pc
               @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/coccl.pc ${PROJECT_BINARY_DIR}/coccl-codec.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The guides the headers and tools refer to, under <prefix>/share/doc/coccl.
install(FILES ${PROJECT_SOURCE_DIR}/docs/codec-plugins.md ${PROJECT_SOURCE_DIR}/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/perf/coccl_perf/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
        RENAME coccl_perf.md)

# The policy guide, the example policies and the measured tables (perf/policy/tuned/: one file
# per machine and setup measured, docs/policy.md "Measured policies"), under
# <prefix>/share/coccl/policy (tuned tables in its tuned/ folder).
install(FILES ${PROJECT_SOURCE_DIR}/docs/policy.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/perf/policy/ DESTINATION ${CMAKE_INSTALL_DATADIR}/coccl/policy
        FILES_MATCHING PATTERN "*.json")

# GoogleTest for the test trees: the system package, else built from a source tree (the GPU
# machine may have none): $COCCL_GTEST_SOURCE_DIR, by default a copy of Debian's
# /usr/src/googletest in the git-ignored build-deps/googletest. Included by tests/ and by the
# stand-alone wrapper project of tests/gpu/codec; a second include finds the first's targets.
find_package(GTest QUIET)
if(NOT GTest_FOUND)
  set(COCCL_GTEST_SOURCE_DIR "${CMAKE_CURRENT_LIST_DIR}/../build-deps/googletest"
      CACHE PATH "GoogleTest source tree, used when find_package(GTest) finds none")
  if(NOT EXISTS ${COCCL_GTEST_SOURCE_DIR}/CMakeLists.txt)
    message(FATAL_ERROR "GoogleTest not found: install libgtest-dev or set COCCL_GTEST_SOURCE_DIR")
  endif()
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
  add_subdirectory(${COCCL_GTEST_SOURCE_DIR} ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
  if(NOT TARGET GTest::gtest)  # googletest >= 1.11 defines the aliases itself
    add_library(GTest::gtest ALIAS gtest)
    add_library(GTest::gtest_main ALIAS gtest_main)
  endif()
  # Later find_package(GTest) calls (this file again) find these targets, not a second copy.
  file(WRITE ${CMAKE_FIND_PACKAGE_REDIRECTS_DIR}/gtest-config.cmake
       "# GoogleTest built from ${COCCL_GTEST_SOURCE_DIR} by cmake/coccl_gtest.cmake\n")
  set(GTest_FOUND TRUE)
endif()
include(GoogleTest)

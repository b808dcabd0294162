# Installation, the CMake package, pkg-config, man page, bash completion and
# the Debian package (issue 8). Included from the top CMakeLists.txt after the
# kcache and kcache_runtime_shared targets exist.
#
# Layout under the prefix (GNUInstallDirs):
#   bin/kcache
#   lib/ARCH/libkcache.so.0 (+ .so.0.x.y, .so)     the runtime library (ARCH: x86_64-linux-gnu, ...)
#   include/kcache/runtime/{kcache.h,kcache_embedded.h,kcache_vulkan.h,runtime.hpp}
#   lib/ARCH/cmake/kcache/                         find_package(kcache)
#   lib/ARCH/pkgconfig/kcache.pc
#   share/man/man1/kcache.1.gz                     gzip -9n, as Debian policy asks
#   share/bash-completion/completions/kcache
#   libexec/kcache/{glslc,glslangValidator}        the launcher's links (launcher.cmake)
#   share/zsh/vendor-completions/_kcache
#   share/doc/kcache/copyright                     kcache's and toml++'s licences
# Everything is relocatable: `cmake --install build --prefix DIR` works for
# any DIR, and the .deb installs it under /usr.
#
# The runtime library is shared (libkcache.so.N, see
# lib/kcache/runtime/CMakeLists.txt for why); the CLI stays one executable
# that links kcache's modules statically and needs no library of its own.
# The library goes into the multiarch folder (lib/x86_64-linux-gnu), as
# Debian installs libraries, whatever the prefix: GNUInstallDirs chooses it
# only for the prefix /usr at configure time, and the .deb is made from a
# build configured for /usr/local. A CMAKE_INSTALL_LIBDIR other than plain
# "lib" is kept.
if(CMAKE_LIBRARY_ARCHITECTURE AND (NOT DEFINED CACHE{CMAKE_INSTALL_LIBDIR} OR "$CACHE{CMAKE_INSTALL_LIBDIR}" STREQUAL "lib"))
  set(CMAKE_INSTALL_LIBDIR "lib/${CMAKE_LIBRARY_ARCHITECTURE}" CACHE PATH "object code libraries (multiarch)" FORCE)
endif()
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(k_cmake_dir "${CMAKE_INSTALL_LIBDIR}/cmake/kcache")

# In kcache's own tree, kcache_add_kernels() finds the executable by the same
# name an installed package gives it.
add_executable(kcache::kcache ALIAS kcache)
set_target_properties(kcache_runtime_shared PROPERTIES EXPORT_NAME runtime)

install(TARGETS kcache EXPORT kcacheTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS kcache_runtime_shared EXPORT kcacheTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES lib/kcache/runtime/kcache.h lib/kcache/runtime/kcache_embedded.h lib/kcache/runtime/kcache_vulkan.h
              lib/kcache/runtime/runtime.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kcache/runtime)
install(EXPORT kcacheTargets NAMESPACE kcache:: FILE kcacheTargets.cmake DESTINATION ${k_cmake_dir})
set(KCACHE_LAUNCHER_INSTALL_DIR "${CMAKE_INSTALL_LIBEXECDIR}/kcache")
configure_package_config_file(cmake/kcacheConfig.cmake.in "${CMAKE_BINARY_DIR}/cmake/kcacheConfig.cmake"
                              INSTALL_DESTINATION ${k_cmake_dir} PATH_VARS KCACHE_LAUNCHER_INSTALL_DIR)
# 0.x: a minor release may break the API, so only the same minor matches.
write_basic_package_version_file("${CMAKE_BINARY_DIR}/cmake/kcacheConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_BINARY_DIR}/cmake/kcacheConfig.cmake" "${CMAKE_BINARY_DIR}/cmake/kcacheConfigVersion.cmake"
              cmake/kcacheKernels.cmake
        DESTINATION ${k_cmake_dir})
include(${PROJECT_SOURCE_DIR}/cmake/kcacheKernels.cmake)
include(${PROJECT_SOURCE_DIR}/cmake/launcher.cmake)

file(RELATIVE_PATH KCACHE_PC_PREFIX_REL "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(cmake/kcache.pc.in "${CMAKE_BINARY_DIR}/pkgconfig/kcache.pc" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/pkgconfig/kcache.pc" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Man page and completions, generated from the built kcache's --help
# (scripts/gen_cli_docs.py), so they never disagree with the program, with
# the man page's hand-written sections (docs/man/kcache-sections.1).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
find_program(KCACHE_GZIP gzip REQUIRED)
set(k_doc_dir "${CMAKE_BINARY_DIR}/doc")
add_custom_command(
  OUTPUT "${k_doc_dir}/kcache.1" "${k_doc_dir}/kcache.1.gz" "${k_doc_dir}/kcache.bash-completion" "${k_doc_dir}/_kcache"
  COMMAND "${CMAKE_COMMAND}" -E make_directory "${k_doc_dir}"
  COMMAND Python3::Interpreter "${PROJECT_SOURCE_DIR}/scripts/gen_cli_docs.py" $<TARGET_FILE:kcache>
          --man "${k_doc_dir}/kcache.1" --man-sections "${PROJECT_SOURCE_DIR}/docs/man/kcache-sections.1"
          --bash "${k_doc_dir}/kcache.bash-completion" --zsh "${k_doc_dir}/_kcache"
  # -n: no name or time in the header, so the package is reproducible.
  COMMAND "${KCACHE_GZIP}" -9nkf "${k_doc_dir}/kcache.1"
  DEPENDS kcache "${PROJECT_SOURCE_DIR}/scripts/gen_cli_docs.py" "${PROJECT_SOURCE_DIR}/docs/man/kcache-sections.1"
  COMMENT "Generating the kcache man page and shell completions from --help"
  VERBATIM)
add_custom_target(kcache_docs ALL DEPENDS "${k_doc_dir}/kcache.1.gz" "${k_doc_dir}/kcache.bash-completion"
                                          "${k_doc_dir}/_kcache")
install(FILES "${k_doc_dir}/kcache.1.gz" DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES "${k_doc_dir}/kcache.bash-completion" DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME kcache)
install(FILES "${k_doc_dir}/_kcache" DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES "${PROJECT_SOURCE_DIR}/cmake/copyright" DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The package's changelog (Debian policy: changelog.gz in the doc folder,
# gzip -9n like the man page).
add_custom_command(
  OUTPUT "${k_doc_dir}/changelog.gz"
  COMMAND "${CMAKE_COMMAND}" -E make_directory "${k_doc_dir}"
  COMMAND "${CMAKE_COMMAND}" -E copy "${PROJECT_SOURCE_DIR}/cmake/deb/changelog" "${k_doc_dir}/changelog"
  COMMAND "${KCACHE_GZIP}" -9nf "${k_doc_dir}/changelog"
  DEPENDS "${PROJECT_SOURCE_DIR}/cmake/deb/changelog"
  VERBATIM)
add_custom_target(kcache_changelog ALL DEPENDS "${k_doc_dir}/changelog.gz")
install(FILES "${k_doc_dir}/changelog.gz" DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Why kcache-launcher is a static binary, for lintian (cmake/deb/lintian-overrides).
install(FILES "${PROJECT_SOURCE_DIR}/cmake/deb/lintian-overrides" DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
        RENAME kcache)

# Debian package: `cpack -G DEB` in the build folder → kcache_<version>_<arch>.deb.
# Depends are computed by dpkg-shlibdeps from what the binary and library
# really link (LMDB, zstd, libsodium, xxhash, fmt, mimalloc, SPIRV-Tools,
# libstdc++, ...). Vulkan is dlopened, so the loader and a driver are
# Recommends; tl-expected (header-only, used by runtime.hpp) too. libcurl
# is dlopened too (remote/curl_internal.hpp) but HTTP remotes and bundle
# URLs need it: a Depends.
set(CPACK_PACKAGE_NAME kcache)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "prebuild GPU kernels offline and ship them")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
       "kcache compiles GLSL/HLSL kernels to validated SPIR-V (and Vulkan\n"
       "pipeline-cache blobs) into LMDB stores keyed by content, and ships them as\n"
       "signed zstd bundles. This package holds the kcache command, the runtime\n"
       "library libkcache with its C and C++ headers, a CMake package\n"
       "(find_package(kcache), kcache_add_kernels()) and a pkg-config file.")
# Who answers for the package (Maintainer): set it to your team's address.
set(KCACHE_PACKAGE_CONTACT "kcache maintainers <kcache-maintainers@example.org>" CACHE STRING
    "the Debian package's Maintainer")
set(CPACK_PACKAGE_CONTACT "${KCACHE_PACKAGE_CONTACT}")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libcurl4")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "libvulkan1, mesa-vulkan-drivers | vulkan-icd, libexpected-dev, pkg-config, bash-completion")
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# libkcache.so.0 is a shared library in the linker's path: ldconfig runs after
# install and removal (lintian: lacks-ldconfig-trigger).
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "${PROJECT_SOURCE_DIR}/cmake/deb/triggers")
# Debug info stays in the build tree (the binary is ~100 MB with it).
set(CPACK_STRIP_FILES ON)
include(CPack)

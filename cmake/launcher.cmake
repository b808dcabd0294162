# The launcher's links (README "Drop-in glslc"): glslc and glslangValidator
# in a folder of their own, each a symlink to kcache-launcher beside them
# (tools/kcache-launcher: serves a hit with no compiler loaded, hands the
# rest to bin/kcache), as ccache installs /usr/lib/ccache/gcc. A build puts
# the folder first on PATH, or names a link where it names its compiler
# (FindVulkan's Vulkan_GLSLC_EXECUTABLE / Vulkan_GLSLANG_VALIDATOR_EXECUTABLE;
# the CMake package's kcache_glslc_launcher() sets both). Included by
# install.cmake.
set(k_link_dir "${CMAKE_BINARY_DIR}/launcher-links")
file(MAKE_DIRECTORY "${k_link_dir}")
foreach(tool glslc glslangValidator)
  file(CREATE_LINK "kcache-launcher" "${k_link_dir}/${tool}" SYMBOLIC)
  install(FILES "${k_link_dir}/${tool}" DESTINATION ${KCACHE_LAUNCHER_DIR})
endforeach()
install(TARGETS kcache-launcher RUNTIME DESTINATION ${KCACHE_LAUNCHER_DIR})

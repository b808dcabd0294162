# kcache_add_kernels(TARGET <name> MANIFEST <file> [BACKEND spirv|vulkan]
#                    [DEVICE <selector>] [STORE <dir>]
#                    [BUNDLE <out.kcb> [NAMESPACE <backend/fingerprint>]]
#                    [EMIT cpp|c EMIT_TARGET <target> [EMIT_NAME <identifier>]])
#
# Builds the kernels of a kcache manifest as part of the build: a target
# <name> (in ALL) runs `kcache build` whenever the manifest, a kernel source
# or any file a kernel includes changed, and never otherwise. kcache writes
# the list of files it read as a depfile (`kcache build --depfile`), so an
# include added to a shader is tracked from the next build on. A new kcache
# binary reruns it too. The step fails the build when a kernel fails.
#
#   TARGET   the target to create; its properties KCACHE_STORE and
#            KCACHE_BUNDLE give the store directory and bundle path, for
#            target_compile_definitions or install(FILES).
#   MANIFEST the kcache.toml (relative paths: to the current source dir).
#   BACKEND  spirv (default; portable) or vulkan (also pipeline-cache blobs
#            for one device of the build machine, see DEVICE).
#   DEVICE   with BACKEND vulkan: `kcache devices` selector (default device
#            otherwise).
#   STORE    the store directory (default: <name>.kcache in the current
#            binary dir, so a build tree never touches the user's store).
#   BUNDLE   also export a namespace of the store into this bundle file (one
#            file to install or ship; `kcache import` on the target machine).
#   NAMESPACE the namespace BUNDLE holds, e.g. spirv/vulkan1.2 (`kcache
#            inspect` lists them); default: the store's only namespace. Needed
#            for BACKEND vulkan (vulkan/<fingerprint>, `kcache devices`) and
#            for manifests with several targets.
#   EMIT     also write the kernels as sources (`kcache emit --lang cpp|c`,
#            README "Embedding kernels") and add them to EMIT_TARGET, an
#            executable or library of this project: it then carries every
#            kernel of the store's SPIR-V namespace (NAMESPACE, or the only
#            one) and needs no store at run time. The header
#            <EMIT_NAME>.hpp (.h for c) is on EMIT_TARGET's include path;
#            EMIT_NAME (default: TARGET with non-identifier characters as
#            '_') names the files, the C++ namespace / C prefix. The target
#            property KCACHE_EMIT_DIR gives the folder.
#
# The kcache executable is the imported target kcache::kcache (from
# find_package(kcache)) or, inside kcache's own build, the kcache target.
# Needs the Ninja or a Makefile generator (add_custom_command DEPFILE).
# Not cmake_minimum_required(): that would reset the including project's policies.
if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "kcache_add_kernels needs CMake 3.20 or newer (add_custom_command DEPFILE)")
endif()

function(kcache_add_kernels)
  cmake_parse_arguments(K "" "TARGET;MANIFEST;BACKEND;DEVICE;STORE;BUNDLE;NAMESPACE;EMIT;EMIT_TARGET;EMIT_NAME" ""
                        ${ARGN})
  if(K_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kcache_add_kernels: unknown arguments: ${K_UNPARSED_ARGUMENTS}")
  endif()
  foreach(required TARGET MANIFEST)
    if(NOT K_${required})
      message(FATAL_ERROR "kcache_add_kernels: ${required} is required")
    endif()
  endforeach()
  if(NOT K_BACKEND)
    set(K_BACKEND spirv)
  endif()
  if(NOT K_BACKEND MATCHES "^(spirv|vulkan)$")
    message(FATAL_ERROR "kcache_add_kernels: BACKEND must be spirv or vulkan, not '${K_BACKEND}'")
  endif()
  if(K_DEVICE AND NOT K_BACKEND STREQUAL "vulkan")
    message(FATAL_ERROR "kcache_add_kernels: DEVICE needs BACKEND vulkan")
  endif()
  if(K_NAMESPACE AND NOT K_BUNDLE AND NOT K_EMIT)
    message(FATAL_ERROR "kcache_add_kernels: NAMESPACE selects what BUNDLE or EMIT holds; give one of them too")
  endif()
  if(K_EMIT AND NOT K_EMIT MATCHES "^(cpp|c)$")
    message(FATAL_ERROR "kcache_add_kernels: EMIT must be cpp or c, not '${K_EMIT}'")
  endif()
  if(K_EMIT AND NOT TARGET "${K_EMIT_TARGET}")
    message(FATAL_ERROR "kcache_add_kernels: EMIT needs EMIT_TARGET, an existing target to add the sources to")
  endif()
  if((K_EMIT_TARGET OR K_EMIT_NAME) AND NOT K_EMIT)
    message(FATAL_ERROR "kcache_add_kernels: EMIT_TARGET and EMIT_NAME go with EMIT cpp|c")
  endif()
  if(K_BUNDLE AND K_BACKEND STREQUAL "vulkan" AND NOT K_NAMESPACE)
    message(FATAL_ERROR "kcache_add_kernels: BUNDLE with BACKEND vulkan needs NAMESPACE vulkan/<fingerprint> "
                        "(`kcache devices` prints the fingerprint)")
  endif()
  if(NOT TARGET kcache::kcache)
    message(FATAL_ERROR "kcache_add_kernels: no kcache::kcache target; call find_package(kcache) first")
  endif()
  get_filename_component(manifest "${K_MANIFEST}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${manifest}")
    message(FATAL_ERROR "kcache_add_kernels: manifest ${manifest} does not exist")
  endif()
  if(NOT K_STORE)
    set(K_STORE "${CMAKE_CURRENT_BINARY_DIR}/${K_TARGET}.kcache")
  endif()
  get_filename_component(store "${K_STORE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")

  set(base "${CMAKE_CURRENT_BINARY_DIR}/${K_TARGET}.kcache-build")
  set(stamp "${base}.stamp")
  set(backend_args)
  if(K_BACKEND STREQUAL "vulkan")
    list(APPEND backend_args --backend vulkan)
    if(K_DEVICE)
      list(APPEND backend_args --device "${K_DEVICE}")
    endif()
  endif()
  # The stamp is touched only after kcache succeeded, so a failed build
  # reruns; kcache's own report is kept beside it for inspection.
  add_custom_command(
    OUTPUT "${stamp}"
    COMMAND kcache::kcache build "${manifest}" --store "${store}" ${backend_args}
            --depfile "${base}.d" --depfile-target "${stamp}" --report "${base}.json"
    COMMAND "${CMAKE_COMMAND}" -E touch "${stamp}"
    DEPENDS "${manifest}" "$<TARGET_FILE:kcache::kcache>"
    DEPFILE "${base}.d"
    COMMENT "kcache: building the kernels of ${K_MANIFEST}"
    VERBATIM)
  set(outputs "${stamp}")

  set(bundle "")
  if(K_BUNDLE)
    set(namespace_args)
    if(K_NAMESPACE)
      set(namespace_args --namespace "${K_NAMESPACE}")
    endif()
    get_filename_component(bundle "${K_BUNDLE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
    add_custom_command(
      OUTPUT "${bundle}"
      COMMAND kcache::kcache export --store "${store}" ${namespace_args} -o "${bundle}"
      DEPENDS "${stamp}" "$<TARGET_FILE:kcache::kcache>"
      COMMENT "kcache: exporting ${K_TARGET}'s kernels to ${K_BUNDLE}"
      VERBATIM)
    list(APPEND outputs "${bundle}")
  endif()

  set(emit_dir "")
  if(K_EMIT)
    if(NOT K_EMIT_NAME)
      string(MAKE_C_IDENTIFIER "${K_TARGET}" K_EMIT_NAME)
    endif()
    set(emit_dir "${CMAKE_CURRENT_BINARY_DIR}/${K_TARGET}.kcache-emit")
    if(K_EMIT STREQUAL "cpp")
      set(emitted "${emit_dir}/${K_EMIT_NAME}.hpp" "${emit_dir}/${K_EMIT_NAME}.cpp")
    else()
      set(emitted "${emit_dir}/${K_EMIT_NAME}.h" "${emit_dir}/${K_EMIT_NAME}.c")
    endif()
    set(namespace_args)
    if(K_NAMESPACE)
      set(namespace_args --namespace "${K_NAMESPACE}")
    endif()
    add_custom_command(
      OUTPUT ${emitted}
      COMMAND kcache::kcache emit --store "${store}" ${namespace_args} --lang ${K_EMIT} --name "${K_EMIT_NAME}"
              -o "${emit_dir}"
      DEPENDS "${stamp}" "$<TARGET_FILE:kcache::kcache>"
      COMMENT "kcache: emitting ${K_TARGET}'s kernels as ${K_EMIT} sources"
      VERBATIM)
    list(APPEND outputs ${emitted})
    target_sources(${K_EMIT_TARGET} PRIVATE ${emitted})
    target_include_directories(${K_EMIT_TARGET} PRIVATE "${emit_dir}"
                               $<TARGET_PROPERTY:kcache::runtime,INTERFACE_INCLUDE_DIRECTORIES>)
  endif()

  add_custom_target(${K_TARGET} ALL DEPENDS ${outputs})
  set_target_properties(${K_TARGET} PROPERTIES KCACHE_STORE "${store}" KCACHE_BUNDLE "${bundle}"
                                               KCACHE_EMIT_DIR "${emit_dir}")
  if(K_EMIT)
    add_dependencies(${K_EMIT_TARGET} ${K_TARGET})
  endif()
endfunction()

# kcache_glslc_launcher()
#
# Makes the project's existing glslc and glslangValidator calls go through
# kcache's launcher (README "Drop-in glslc"): sets FindVulkan's cache
# variables Vulkan_GLSLC_EXECUTABLE and Vulkan_GLSLANG_VALIDATOR_EXECUTABLE
# to the launcher's links, so `Vulkan::glslc` and
# `${Vulkan_GLSLC_EXECUTABLE}` in add_custom_command run kcache. Call it
# before find_package(Vulkan COMPONENTS glslc). Each command is then served
# from the user's store (KCACHE_STORE, remotes from KCACHE_REMOTE or the
# store's setting) and compiled only on a miss; the outputs are glslc's.
# A project that finds glslc itself (find_program) can be pointed at
# ${kcache_LAUNCHER_DIR}/glslc the same way.
function(kcache_glslc_launcher)
  if(NOT kcache_LAUNCHER_DIR)
    message(FATAL_ERROR "kcache_glslc_launcher: kcache_LAUNCHER_DIR is not set (find_package(kcache) sets it)")
  endif()
  set(Vulkan_GLSLC_EXECUTABLE "${kcache_LAUNCHER_DIR}/glslc" CACHE FILEPATH "glslc, through kcache" FORCE)
  set(Vulkan_GLSLANG_VALIDATOR_EXECUTABLE "${kcache_LAUNCHER_DIR}/glslangValidator"
      CACHE FILEPATH "glslangValidator, through kcache" FORCE)
endfunction()

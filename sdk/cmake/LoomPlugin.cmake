# loom_add_plugin(NAME SOURCES src...): builds a Loom plugin shared object.
#   - output file loom_<NAME>.so (no "lib" prefix) in LOOM_BUILD_PLUGIN_DIR, by default
#     <build dir>/plugins, so `infer-run --plugin <build dir>/plugins` or LOOM_PLUGIN_PATH
#     finds everything a project built
#   - only loom_plugin_entry is exported (hidden visibility plus a version script), symbols of
#     static libraries linked in stay private (--exclude-libs), and a post-build check fails
#     the build if the file exports anything else or lacks the entry point
#   - links only the plugin SDK headers, never libloom: plugins talk to the core through the ABI
#   - installs into the plugin directory the core searches (COMPONENT <NAME>):
#       in the Loom source tree: <libdir>/loom/plugins under the install prefix;
#       through find_package(Loom): the installed Loom's own plugin directory
#       (LOOM_PLUGIN_INSTALL_DIR, a cache variable, defaults to LOOM_PLUGIN_DIR) -- unless the
#       project is installed under a prefix of its own (`cmake --install --prefix X` or
#       -DCMAKE_INSTALL_PREFIX=X): then X/<libdir>/loom/plugins (LOOM_PLUGIN_DIR_RELATIVE)
#   - compiled with -O2 when the project sets no build type (CMake's default builds without
#     optimization, and a slow kernel looks like a slow device).
#
# Works in the Loom build (included by the top-level CMakeLists) and from an installed Loom
# (included by LoomConfig.cmake); the two differ only in the SDK target and the install path.
include_guard(GLOBAL)
set(_LOOM_PLUGIN_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

if(LOOM_PLUGIN_INSTALLED_SDK)
  set(LOOM_PLUGIN_INSTALL_DIR "${LOOM_PLUGIN_DIR}" CACHE PATH
      "Directory loom_add_plugin installs plugins into (default: the installed Loom's plugin directory)")
endif()

function(loom_add_plugin NAME)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  if(NOT NAME MATCHES "^[A-Za-z0-9_]+$")
    message(FATAL_ERROR "loom_add_plugin: plugin name '${NAME}' may only hold letters, digits and '_'")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "loom_add_plugin(${NAME}): no SOURCES given")
  endif()
  if(TARGET loom::sdk)
    set(sdk_target loom::sdk)  # the Loom source tree
  elseif(TARGET Loom::sdk)
    set(sdk_target Loom::sdk)  # an installed Loom (find_package)
  else()
    message(FATAL_ERROR "loom_add_plugin(${NAME}): the Loom SDK target is missing; call find_package(Loom) first")
  endif()
  set(output_dir "${LOOM_BUILD_PLUGIN_DIR}")
  if(NOT output_dir)
    set(output_dir "${CMAKE_BINARY_DIR}/plugins")
  endif()

  set(target loom_plugin_${NAME})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME "loom_${NAME}"
    LIBRARY_OUTPUT_DIRECTORY "${output_dir}"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${target} PRIVATE ${sdk_target})
  target_compile_options(${target} PRIVATE $<$<CONFIG:>:-O2>)
  target_link_options(${target} PRIVATE "LINKER:--exclude-libs,ALL"
    "LINKER:--version-script=${_LOOM_PLUGIN_CMAKE_DIR}/loom_plugin.map")
  # Every undefined symbol must come from the plugin's own libraries, except in the Loom fuzz
  # build (LOOM_LINK_NO_UNDEFINED OFF), whose plugins take the ASan runtime from the executable.
  if(NOT DEFINED LOOM_LINK_NO_UNDEFINED OR LOOM_LINK_NO_UNDEFINED)
    target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  endif()
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${_LOOM_PLUGIN_CMAKE_DIR}/loom_plugin.map")

  if(CMAKE_NM)
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND "${CMAKE_COMMAND}" "-DNM=${CMAKE_NM}" "-DPLUGIN=$<TARGET_FILE:${target}>" "-DNAME=${NAME}"
              -P "${_LOOM_PLUGIN_CMAKE_DIR}/LoomCheckPluginExports.cmake"
      COMMENT "Checking that loom_${NAME} exports only loom_plugin_entry"
      VERBATIM)
  endif()

  if(LOOM_PLUGIN_INSTALLED_SDK)
    # Decided when installing (the escaped variable lands in the install script): with the
    # prefix the project was configured with, and that prefix CMake's default, the plugin goes
    # into LOOM_PLUGIN_INSTALL_DIR; under any prefix the user chose, into
    # <prefix>/<LOOM_PLUGIN_DIR_RELATIVE>. Both as paths relative to the install-time prefix,
    # which DESTDIR staging (and CPack) keep working with.
    file(RELATIVE_PATH to_loom_dir "${CMAKE_INSTALL_PREFIX}" "${LOOM_PLUGIN_INSTALL_DIR}")
    set(to_own_dir "${LOOM_PLUGIN_DIR_RELATIVE}")
    if(NOT to_own_dir)
      set(to_own_dir "lib/loom/plugins")
    endif()
    if(CMAKE_INSTALL_PREFIX_INITIALIZED_TO_DEFAULT)
      set(own_prefix FALSE)
    else()
      set(own_prefix TRUE)
    endif()
    install(CODE "
      if(NOT ${own_prefix} AND CMAKE_INSTALL_PREFIX STREQUAL \"${CMAKE_INSTALL_PREFIX}\")
        set(_loom_plugin_destination \"${to_loom_dir}\")
      else()
        set(_loom_plugin_destination \"${to_own_dir}\")
      endif()" COMPONENT ${NAME})
    install(TARGETS ${target} LIBRARY DESTINATION "\${_loom_plugin_destination}" COMPONENT ${NAME})
  elseif(DEFINED LOOM_INSTALL_PLUGIN_DIR)
    install(TARGETS ${target} LIBRARY DESTINATION "${LOOM_INSTALL_PLUGIN_DIR}" COMPONENT ${NAME})
    # Plugins under plugins/ are recorded for packaging/ (one Debian package each); the kind
    # comes from the directory (plugins/formats, plugins/devices, plugins/kernels). Test
    # plugins elsewhere in the tree are not packaged.
    if(CMAKE_CURRENT_SOURCE_DIR MATCHES "^${PROJECT_SOURCE_DIR}/plugins/(formats|devices|kernels)/")
      set(kind "${CMAKE_MATCH_1}")
      if(NOT kind STREQUAL "kernels")
        string(REGEX REPLACE "s$" "" kind "${kind}")  # format, device
      endif()
      set_property(GLOBAL APPEND PROPERTY LOOM_PLUGINS ${NAME})
      set_property(GLOBAL PROPERTY LOOM_PLUGIN_${NAME}_KIND ${kind})
    endif()
  endif()
endfunction()

# loom_add_plugin(NAME SOURCES ...): builds a Loom plugin shared object.
#   - output file loom_<NAME>.so, no "lib" prefix, in the build tree's plugin directory
#   - only loom_plugin_entry is exported (hidden visibility plus a version script), and symbols
#     of static libraries linked in stay private (--exclude-libs)
#   - links only the plugin SDK headers, never libloom: plugins talk to the core through the ABI
#   - installs into <libdir>/loom/plugins (COMPONENT <NAME>)
set(_LOOM_PLUGIN_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(loom_add_plugin NAME)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  set(target loom_plugin_${NAME})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME "loom_${NAME}"
    LIBRARY_OUTPUT_DIRECTORY "${LOOM_BUILD_PLUGIN_DIR}"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${target} PRIVATE loom::sdk)
  target_link_options(${target} PRIVATE "LINKER:--exclude-libs,ALL" "LINKER:--no-undefined"
    "LINKER:--version-script=${_LOOM_PLUGIN_CMAKE_DIR}/loom_plugin.map")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${_LOOM_PLUGIN_CMAKE_DIR}/loom_plugin.map")
  if(DEFINED LOOM_INSTALL_PLUGIN_DIR)
    install(TARGETS ${target} LIBRARY DESTINATION "${LOOM_INSTALL_PLUGIN_DIR}" COMPONENT ${NAME})
  endif()
endfunction()

# cmake -DNM=<nm> -DPLUGIN=<file.so> -DNAME=<plugin name> -P LoomCheckPluginExports.cmake
#
# Run after every plugin link (loom_add_plugin adds it as a POST_BUILD step): a Loom plugin
# must export exactly one dynamic symbol, the function loom_plugin_entry. Anything else
# exported can clash with other plugins or libloom in the same process, and a missing entry
# means the core will refuse the file at load time -- better to fail the build now.
if(NOT NM OR NOT PLUGIN)
  message(FATAL_ERROR "LoomCheckPluginExports: pass -DNM=<nm> -DPLUGIN=<file>")
endif()
execute_process(COMMAND "${NM}" -D --defined-only "${PLUGIN}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "loom_add_plugin(${NAME}): '${NM} -D ${PLUGIN}' failed: ${err}")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(exported "")
set(entry_ok FALSE)
foreach(line IN LISTS lines)
  # "<address> <type> <name>[@version]"; type A marks version-node names, not symbols.
  if(line MATCHES "^[0-9a-fA-F]+ ([A-Za-z]) ([^@ ]+)")
    set(type "${CMAKE_MATCH_1}")
    set(sym "${CMAKE_MATCH_2}")
    if(type STREQUAL "A")
      continue()
    endif()
    if(sym STREQUAL "loom_plugin_entry" AND type STREQUAL "T")
      set(entry_ok TRUE)
    else()
      list(APPEND exported "${sym} (${type})")
    endif()
  endif()
endforeach()
if(NOT entry_ok)
  message(FATAL_ERROR "loom_add_plugin(${NAME}): ${PLUGIN} does not export the function "
    "loom_plugin_entry. Define it as: extern \"C\" LOOM_PLUGIN_EXPORT loom_status_t* "
    "loom_plugin_entry(const loom_host_api_t*, loom_registrar_t*, loom_plugin_info_t*)")
endif()
if(exported)
  list(JOIN exported ", " exported_text)
  message(FATAL_ERROR "loom_add_plugin(${NAME}): ${PLUGIN} exports symbols besides "
    "loom_plugin_entry: ${exported_text}. Build with hidden visibility and the loom_plugin.map "
    "version script (loom_add_plugin sets both; do not override them).")
endif()

# loom_package_plugin(NAME SUMMARY <one line> DESCRIPTION <paragraph> [DEPENDS <debian deps>])
#
# Describes the Debian package of the in-tree plugin NAME (a loom_add_plugin target). Every
# plugin built with loom_add_plugin gets a package named loom-<kind>-<NAME> (kind from its
# directory: plugins/formats -> format, plugins/devices -> device, plugins/kernels ->
# kernels) without further work; calling this from the plugin's CMakeLists gives the package
# its real description. Library dependencies are found by dpkg-shlibdeps, so DEPENDS is only
# for what the loader cannot see (e.g. an OpenCL ICD: "ocl-icd-libopencl1 | opencl-icd").
include_guard(GLOBAL)

function(loom_package_plugin NAME)
  cmake_parse_arguments(ARG "" "SUMMARY;DESCRIPTION" "DEPENDS" ${ARGN})
  if(NOT ARG_SUMMARY)
    message(FATAL_ERROR "loom_package_plugin(${NAME}): SUMMARY is required (one line, no final period)")
  endif()
  set_property(GLOBAL PROPERTY LOOM_PACKAGE_${NAME}_SUMMARY "${ARG_SUMMARY}")
  set_property(GLOBAL PROPERTY LOOM_PACKAGE_${NAME}_DESCRIPTION "${ARG_DESCRIPTION}")
  set_property(GLOBAL PROPERTY LOOM_PACKAGE_${NAME}_DEPENDS "${ARG_DEPENDS}")
endfunction()

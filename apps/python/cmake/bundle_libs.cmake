# Install-time script (apps/python/CMakeLists.txt, the wheel only): makes the installed package
# self-contained, as `auditwheel repair` does. Every shared library that libloom and the plugins
# need, directly or through each other, is copied into loom/lib under the name it is NEEDED by,
# and every ELF file of the package gets a RUNPATH relative to itself ($ORIGIN), so that the
# dynamic loader resolves them inside the package on a machine without Loom's dependencies.
#
# Left to the system: the C runtime (glibc's libraries and the dynamic loader), libstdc++ and
# libgcc_s, which every Python extension on Linux links and manylinux assumes; bundling a second
# libstdc++ or libc into a process that already has one is what breaks, not what helps.
#
# Inputs: LOOM_BUNDLE_PACKAGE (the installed loom/ directory), LOOM_BUNDLE_LIBLOOM (libloom's
# file name in loom/lib), LOOM_BUNDLE_PLUGINS (plugin file names in loom/lib/loom/plugins),
# LOOM_PATCHELF (patchelf: CMake can rewrite an RPATH only in place, and the system libraries
# have none to rewrite).
cmake_minimum_required(VERSION 3.25)

set(_lib "${LOOM_BUNDLE_PACKAGE}/lib")
set(_plugin_dir "${_lib}/loom/plugins")
list(TRANSFORM LOOM_BUNDLE_PLUGINS PREPEND "${_plugin_dir}/" OUTPUT_VARIABLE _plugins)

# The base system, matched on the NEEDED names (so they are neither bundled nor scanned). Kept in
# step with BASE_SYSTEM in tests/python/test_wheel.py, which checks the result.
set(_base
  "^ld-linux.*\\.so" "^linux-vdso\\.so" "^libc\\.so" "^libm\\.so" "^libmvec\\.so"
  "^libpthread\\.so" "^libdl\\.so" "^librt\\.so" "^libutil\\.so" "^libresolv\\.so"
  "^libnsl\\.so" "^libanl\\.so" "^libstdc\\+\\+\\.so" "^libgcc_s\\.so"
  # libloom itself is in the package already.
  "^libloom\\.so")

file(GET_RUNTIME_DEPENDENCIES
  LIBRARIES "${_lib}/${LOOM_BUNDLE_LIBLOOM}"
  MODULES ${_plugins}
  RESOLVED_DEPENDENCIES_VAR _deps
  UNRESOLVED_DEPENDENCIES_VAR _missing
  CONFLICTING_DEPENDENCIES_PREFIX _conflict
  PRE_EXCLUDE_REGEXES ${_base})
if(_missing)
  message(FATAL_ERROR "loom wheel: cannot find ${_missing}, needed by libloom or a plugin")
endif()
if(_conflict_FILENAMES)
  foreach(_name IN LISTS _conflict_FILENAMES)
    message(SEND_ERROR "loom wheel: ${_name} resolves to several files: ${_conflict_${_name}}")
  endforeach()
  message(FATAL_ERROR "loom wheel: conflicting dependencies")
endif()

function(_loom_set_runpath file runpath)
  execute_process(COMMAND "${LOOM_PATCHELF}" --set-rpath "${runpath}" "${file}"
                  RESULT_VARIABLE _result ERROR_VARIABLE _error)
  if(NOT _result EQUAL 0)
    message(FATAL_ERROR "loom wheel: patchelf --set-rpath ${runpath} ${file} failed: ${_error}")
  endif()
endfunction()

list(SORT _deps)
foreach(_dep IN LISTS _deps)
  # One regular file under the NEEDED name (a wheel holds no symlinks), its RUNPATH $ORIGIN so
  # that its own dependencies come from beside it too.
  get_filename_component(_name "${_dep}" NAME)
  file(REAL_PATH "${_dep}" _real)
  file(COPY_FILE "${_real}" "${_lib}/${_name}")
  file(CHMOD "${_lib}/${_name}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  _loom_set_runpath("${_lib}/${_name}" "$ORIGIN")
  file(SIZE "${_lib}/${_name}" _size)
  math(EXPR _kib "${_size} / 1024")
  message(STATUS "loom wheel: bundled ${_name} (${_real}, ${_kib} KiB)")
endforeach()

_loom_set_runpath("${_lib}/${LOOM_BUNDLE_LIBLOOM}" "$ORIGIN")
foreach(_plugin IN LISTS _plugins)
  _loom_set_runpath("${_plugin}" "$ORIGIN/../..")
endforeach()

# The plugin-combination matrix: every combination of device plugins Loom ships is tested by
# the conformance runner (tests/conformance) and the model tests (tests/models) with ONLY its
# own plugins. Each combination gets
#   - a target loom_matrix_<name> (part of ALL) that hard-links (or, across file systems,
#     copies) its device plugins and the onnx format plugin into <build>/matrix/<name>/plugins,
#     and nothing else;
#   - tests that pass that directory, and only it, to loom-conformance / infer-run together
#     with --no-default-plugins (so LOOM_PLUGIN_PATH, the install directory and the build
#     tree's plugins/ are not searched), labelled combo=<name>.
# Modes: "fallback" runs the devices in the listed priority order (cpu last takes what the
# others refuse); "nofallback" runs one accelerator alone with --no-fallback, and a test with
# a node the device does not claim is skipped (conformance --skip-unclaimed; model checks exit
# 77, ctest's SKIP_RETURN_CODE), never counted as a pass.
#
# The list below is the one place the combinations live. A combination is defined when all
# its device plugins and the onnx format plugin are built (targets loom_plugin_<device>).
# Conformance scope: "full" runs every backend test; "subset" runs the tests matched by
# LOOM_MATRIX_SUBSET_FILTER (see docs/testing.md for the timings behind the choice).
# Included by every directory that uses it (no include_guard: the variables below belong to the
# including directory's scope); the combinations themselves are defined once per configure.

set(_LOOM_MATRIX_DIR "${CMAKE_CURRENT_LIST_DIR}")
# Where the combinations' tests keep device caches (XDG_CACHE_HOME=<root>/<combination>).
set(LOOM_MATRIX_CACHE_ROOT "${CMAKE_BINARY_DIR}/matrix-cache")

set(LOOM_MATRIX_COMBOS
  # name                     devices (priority)         mode        conformance
  "cpu                       cpu                        fallback    full"
  "onednn_cpu                onednn,cpu                 fallback    full"
  "opencl_cpu                opencl,cpu                 fallback    full"
  "vulkan_cpu                vulkan,cpu                 fallback    full"
  "neon_cpu                  neon,cpu                   fallback    full"
  "opencl_vulkan_onednn_cpu  opencl,vulkan,onednn,cpu   fallback    subset"
  "onednn_nofallback         onednn                     nofallback  full"
  "opencl_nofallback         opencl                     nofallback  full"
  "vulkan_nofallback         vulkan                     nofallback  full")

# The ops that dominate real models (convolution, matrix products, pooling, normalisation,
# activations, element-wise arithmetic, shape plumbing): the backend tests the all-devices
# combination runs, where every test exercises the hand-over between three accelerators.
set(LOOM_MATRIX_SUBSET_FILTER
    "^node/test_(conv|gemm|matmul|maxpool|averagepool|globalaveragepool|batchnorm|relu|sigmoid|tanh|softmax|add|sub|mul|div|concat|reshape|transpose|flatten|layer_normalization|gelu|erf|clip)"
    CACHE STRING "Backend tests (regex) that combinations with conformance scope 'subset' run")

# loom_matrix_define(NAME <name> DEVICES <d1,d2,...> MODE fallback|nofallback
#                    CONFORMANCE full|subset PLUGINS <plugin targets...> [LABELS <labels...>])
# Declares a combination and creates its plugin directory target. LABELS default to
# combo=<name>; combinations that Loom does not ship (tests/matrix's self-test) pass their own.
function(loom_matrix_define)
  cmake_parse_arguments(ARG "" "NAME;DEVICES;MODE;CONFORMANCE" "PLUGINS;LABELS" ${ARGN})
  if(NOT ARG_NAME MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "loom_matrix_define: bad combination name '${ARG_NAME}'")
  endif()
  if(NOT ARG_MODE MATCHES "^(fallback|nofallback)$" OR NOT ARG_CONFORMANCE MATCHES "^(full|subset)$")
    message(FATAL_ERROR "loom_matrix_define(${ARG_NAME}): MODE must be fallback|nofallback and "
                        "CONFORMANCE full|subset")
  endif()
  if(NOT ARG_LABELS)
    set(ARG_LABELS "combo=${ARG_NAME}")
  endif()
  set(root "${CMAKE_BINARY_DIR}/matrix/${ARG_NAME}")
  set(dir "${root}/plugins")
  set(copies)
  foreach(plugin IN LISTS ARG_PLUGINS)
    # One output per plugin, named after the target so the rule needs no generator expression.
    set(stamp "${root}/${plugin}.copied")
    add_custom_command(OUTPUT "${stamp}"
      COMMAND "${CMAKE_COMMAND}" "-DPLUGIN=$<TARGET_FILE:${plugin}>" "-DDEST_DIR=${dir}"
              -P "${_LOOM_MATRIX_DIR}/link_plugin.cmake"
      COMMAND "${CMAKE_COMMAND}" -E touch "${stamp}"
      DEPENDS ${plugin} "$<TARGET_FILE:${plugin}>" "${_LOOM_MATRIX_DIR}/link_plugin.cmake"
      COMMENT "Matrix ${ARG_NAME}: linking ${plugin}"
      VERBATIM)
    list(APPEND copies "${stamp}")
  endforeach()
  add_custom_target(loom_matrix_${ARG_NAME} ALL DEPENDS ${copies})
  set_property(GLOBAL APPEND PROPERTY LOOM_MATRIX_NAMES ${ARG_NAME})
  foreach(field DEVICES MODE CONFORMANCE LABELS PLUGINS)
    set_property(GLOBAL PROPERTY LOOM_MATRIX_${ARG_NAME}_${field} "${ARG_${field}}")
  endforeach()
  set_property(GLOBAL PROPERTY LOOM_MATRIX_${ARG_NAME}_DIR "${dir}")
endfunction()

# loom_matrix_get(<name> <field> <out_var>): DEVICES, MODE, CONFORMANCE, LABELS, PLUGINS, DIR.
function(loom_matrix_get name field out)
  get_property(value GLOBAL PROPERTY LOOM_MATRIX_${name}_${field})
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# Defines every shipped combination whose plugins are built (once per configure).
function(_loom_matrix_define_shipped)
  get_property(done GLOBAL PROPERTY LOOM_MATRIX_SHIPPED_DEFINED)
  if(done)
    return()
  endif()
  set_property(GLOBAL PROPERTY LOOM_MATRIX_SHIPPED_DEFINED TRUE)
  if(NOT TARGET loom_plugin_onnx)
    message(STATUS "matrix: the onnx format plugin is not built; no plugin combinations")
    return()
  endif()
  set(defined)
  set(missing)
  foreach(entry IN LISTS LOOM_MATRIX_COMBOS)
    separate_arguments(fields UNIX_COMMAND "${entry}")
    list(GET fields 0 name)
    list(GET fields 1 devices)
    list(GET fields 2 mode)
    list(GET fields 3 conformance)
    string(REPLACE "," ";" device_list "${devices}")
    set(plugins)
    set(all_built TRUE)
    foreach(device IN LISTS device_list)
      if(TARGET loom_plugin_${device})
        list(APPEND plugins loom_plugin_${device})
      else()
        set(all_built FALSE)
      endif()
    endforeach()
    if(all_built)
      loom_matrix_define(NAME ${name} DEVICES ${devices} MODE ${mode} CONFORMANCE ${conformance}
                         PLUGINS ${plugins} loom_plugin_onnx)
      list(APPEND defined ${name})
    else()
      list(APPEND missing ${name})
    endif()
  endforeach()
  list(JOIN defined ", " defined_text)
  list(JOIN missing ", " missing_text)
  message(STATUS "matrix: plugin combinations: ${defined_text}")
  if(missing)
    message(STATUS "matrix: not built (plugins missing): ${missing_text}")
  endif()
endfunction()

# loom_matrix_shipped(<out_var>): the shipped combinations whose plugins are built.
function(loom_matrix_shipped out)
  _loom_matrix_define_shipped()
  set(result)
  get_property(names GLOBAL PROPERTY LOOM_MATRIX_NAMES)
  foreach(name IN LISTS names)
    loom_matrix_get(${name} LABELS labels)
    if("combo=${name}" IN_LIST labels)
      list(APPEND result ${name})
    endif()
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# loom_matrix_cache_env(<name> <out>): the ENVIRONMENT of a test over combination <name>: the
# device program/pipeline caches (OpenCL, Vulkan) in the build tree, one per combination, never
# in the user's ~/.cache; PoCL's compiled kernels in the one cache of the build tree's tests.
function(loom_matrix_cache_env name out)
  set(env "XDG_CACHE_HOME=${LOOM_MATRIX_CACHE_ROOT}/${name}")
  if(LOOM_TEST_POCL_CACHE_DIR)
    list(APPEND env "POCL_CACHE_DIR=${LOOM_TEST_POCL_CACHE_DIR}")
  endif()
  set(${out} "${env}" PARENT_SCOPE)
endfunction()

# loom_matrix_add_conformance(<name> RUNNER <target> EXPECTED <file> ROOTS <dirs...>
#                             [FILTER <regex>] [TIMEOUT <s>] [SUITE <suite>])
# Registers conformance_<name> (conformance_<suite>_<name> with SUITE); FILTER replaces the combination's conformance scope. RUNNER is
# the loom-conformance target's name, so that ctest prefixes a cross-compiled build's emulator. A missing expected-failures file registers a test that fails
# with the command that writes one, so a newly built combination cannot pass unnoticed.
function(loom_matrix_add_conformance name)
  cmake_parse_arguments(ARG "" "RUNNER;EXPECTED;TIMEOUT;FILTER;SUITE" "ROOTS" ${ARGN})
  # SUITE names a second test suite run over the same combination: conformance_<SUITE>_<name>.
  set(test_name conformance_${name})
  if(ARG_SUITE)
    set(test_name conformance_${ARG_SUITE}_${name})
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 3600)
  endif()
  foreach(field DEVICES MODE CONFORMANCE LABELS DIR)
    loom_matrix_get(${name} ${field} ${field})
  endforeach()
  set(args --devices ${DEVICES} --no-default-plugins --plugin "${DIR}")
  if(MODE STREQUAL "nofallback")
    list(APPEND args --no-fallback --skip-unclaimed)
  endif()
  if(ARG_FILTER)
    list(APPEND args --filter "${ARG_FILTER}")
  elseif(CONFORMANCE STREQUAL "subset")
    list(APPEND args --filter "${LOOM_MATRIX_SUBSET_FILTER}")
  endif()
  if(EXISTS "${ARG_EXPECTED}")
    add_test(NAME ${test_name}
             COMMAND ${ARG_RUNNER} ${args} --expected-failures "${ARG_EXPECTED}" ${ARG_ROOTS})
  else()
    string(JOIN " " write_command ${args} --write-failures "${ARG_EXPECTED}")
    add_test(NAME ${test_name}
             COMMAND "${CMAKE_COMMAND}" -E echo
                     "${test_name}: ${ARG_EXPECTED} does not exist; write it with "
                     "loom-conformance ${write_command}, review every reason and re-run cmake")
    set_tests_properties(${test_name} PROPERTIES WILL_FAIL TRUE)
  endif()
  loom_matrix_cache_env(${name} cache_env)
  set_tests_properties(${test_name} PROPERTIES
                       LABELS "conformance;${LABELS}" TIMEOUT ${ARG_TIMEOUT}
                       ENVIRONMENT "${cache_env}")
  # Combinations that compile device programs fill their cache first (warm_device_cache.cmake),
  # once for all the suites run over the combination.
  if(DEVICES MATCHES "opencl|vulkan" AND TARGET infer-run AND TEST matrix_warm_cache_${name})
    set_tests_properties(${test_name} PROPERTIES FIXTURES_REQUIRED matrix_cache_${name})
  elseif(DEVICES MATCHES "opencl|vulkan" AND TARGET infer-run)
    add_test(NAME matrix_warm_cache_${name}
             COMMAND "${CMAKE_COMMAND}" "-DINFER_RUN=$<TARGET_FILE:infer-run>" "-DPLUGIN_DIR=${DIR}"
                     "-DDEVICES=${DEVICES}"
                     "-DMODEL=${PROJECT_SOURCE_DIR}/apps/infer-run/demo/digits.onnx"
                     -P "${_LOOM_MATRIX_DIR}/warm_device_cache.cmake")
    set_tests_properties(matrix_warm_cache_${name} PROPERTIES
                         LABELS "conformance;${LABELS}" TIMEOUT 600
                         FIXTURES_SETUP matrix_cache_${name} ENVIRONMENT "${cache_env}")
    set_tests_properties(${test_name} PROPERTIES FIXTURES_REQUIRED matrix_cache_${name})
  endif()
endfunction()

# loom_matrix_check_args(<name> <out_var>): the arguments of tests/models' check scripts
# (check_model.py, check_digits.py) that run infer-run with this combination only.
function(loom_matrix_check_args name out)
  foreach(field DEVICES MODE DIR)
    loom_matrix_get(${name} ${field} ${field})
  endforeach()
  set(args --plugin "${DIR}" --device ${DEVICES} --infer-run-arg=--no-default-plugins)
  if(MODE STREQUAL "nofallback")
    list(APPEND args --infer-run-arg=--no-fallback --skip-unclaimed)
  endif()
  set(${out} "${args}" PARENT_SCOPE)
endfunction()

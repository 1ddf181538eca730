# The committed TFLite and ncnn test models on every shipped plugin combination (included by
# tests/matrix/CMakeLists.txt after LoomMatrix.cmake):
#   format_models_tflite_<combo>  tests/formats/tflite/models against the TFLite interpreter's
#   format_models_ncnn_<combo>    tests/formats/ncnn/models against ncnn's outputs
# Each runs every model with infer-run on the combination's plugin directory only (plus the
# format plugin), converts it to .loom with infer-convert and runs that too; both must match the
# reference within the format tests' tolerances (check_format_models.py). In a nofallback
# combination a model with a node the device does not claim is skipped (exit 77), never passed.
# A format whose plugin is not built registers no test.
if(NOT TARGET infer-convert OR NOT TARGET loom_plugin_loom)
  message(STATUS "matrix: infer-convert or the loom format plugin is not built; "
                 "format_models_* disabled")
  return()
endif()

if(LOOM_PYTHON)
  set(_loom_format_python "${LOOM_PYTHON}")
elseif(EXISTS /usr/bin/python3)
  set(_loom_format_python /usr/bin/python3)
else()
  find_program(_loom_format_python NAMES python3)
endif()
execute_process(COMMAND "${_loom_format_python}" -c "import numpy"
                RESULT_VARIABLE _loom_format_no_numpy OUTPUT_QUIET ERROR_QUIET)
if(NOT _loom_format_python OR NOT _loom_format_no_numpy EQUAL 0)
  message(STATUS "matrix: ${_loom_format_python} lacks numpy (apt-get install python3-numpy); "
                 "format_models_* disabled")
  return()
endif()

set(_loom_format_check "${CMAKE_CURRENT_LIST_DIR}/check_format_models.py")
set(_loom_formats)
if(LOOM_WITH_TFLITE AND TARGET loom_plugin_tflite)
  list(APPEND _loom_formats tflite)
endif()
if(LOOM_WITH_NCNN AND TARGET loom_plugin_ncnn)
  list(APPEND _loom_formats ncnn)
endif()
if(NOT _loom_formats)
  message(STATUS "matrix: neither the tflite nor the ncnn format plugin is built; "
                 "format_models_* disabled")
endif()

foreach(format IN LISTS _loom_formats)
  # The TFLite models with MediaPipe custom operators need their kernels (cpu only, so a
  # nofallback combination skips those models).
  set(_loom_format_kernels)
  if(format STREQUAL "tflite" AND TARGET loom_plugin_tflite_mobile)
    set(_loom_format_kernels --kernel-plugin $<TARGET_FILE:loom_plugin_tflite_mobile>)
  endif()
  foreach(combo IN LISTS _loom_combos)
    loom_matrix_check_args(${combo} combo_args)
    loom_matrix_get(${combo} LABELS combo_labels)
    loom_matrix_cache_env(${combo} cache_env)
    add_test(NAME format_models_${format}_${combo}
             COMMAND "${_loom_format_python}" "${_loom_format_check}"
                     "${PROJECT_SOURCE_DIR}/tests/formats/${format}/models"
                     --infer-run $<TARGET_FILE:infer-run>
                     --infer-convert $<TARGET_FILE:infer-convert>
                     --format-plugin $<TARGET_FILE:loom_plugin_${format}>
                     --loom-plugin $<TARGET_FILE:loom_plugin_loom> ${_loom_format_kernels}
                     ${combo_args})
    set_tests_properties(format_models_${format}_${combo} PROPERTIES
                         LABELS "models;matrix;${combo_labels}"
                         TIMEOUT 600 SKIP_RETURN_CODE 77
                         ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;${cache_env}")
  endforeach()
endforeach()

# ctest script: infer-run loads a committed .tflite model through the tflite plugin and runs it
# on cpu, and on onednn,cpu when the onednn plugin exists (reference_models_test compares the
# two devices' numbers against the TFLite interpreter; here the command line path is checked).
#   -DRUN=infer-run -DTFLITE=plugin -DCPU=plugin [-DONEDNN=plugin] -DMODEL=model.tflite
function(run_on devices plugins out_var)
  set(args --no-default-plugins --device ${devices} --seed 7)
  foreach(p IN LISTS plugins)
    list(APPEND args --plugin "${p}")
  endforeach()
  execute_process(COMMAND "${RUN}" ${args} "${MODEL}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "infer-run --device ${devices} failed (${rc}): ${out}${err}")
  endif()
  string(REGEX MATCH "probs: float32 \\[1, 10\\] = [^\n]*" line "${out}")
  if(NOT line)
    message(FATAL_ERROR "infer-run --device ${devices}: no output line for 'probs' in: ${out}")
  endif()
  set(${out_var} "${line}" PARENT_SCOPE)
endfunction()

run_on(cpu "${TFLITE};${CPU}" cpu_line)
message(STATUS "cpu: ${cpu_line}")
if(ONEDNN)
  run_on(onednn,cpu "${TFLITE};${CPU};${ONEDNN}" onednn_line)
  message(STATUS "onednn,cpu: ${onednn_line}")
endif()

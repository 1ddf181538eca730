# Runs infer-run once on a small model with a combination's devices, so that the OpenCL program
# and Vulkan pipeline caches of the combination's XDG_CACHE_HOME (and the tests' PoCL cache) hold
# the compiled kernels before the conformance runner starts its parallel children: otherwise
# each child compiles them at once, and under load the first test cases time out. The outcome is
# printed but never fails: a broken device shows in the tests that need this fixture.
# Arguments: -DINFER_RUN= -DPLUGIN_DIR= -DDEVICES= -DMODEL=
execute_process(
  COMMAND "${INFER_RUN}" --no-default-plugins --plugin "${PLUGIN_DIR}" --device "${DEVICES}"
          --model "${MODEL}"
  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "warm-up on ${DEVICES}: exit ${result}\n${err}")

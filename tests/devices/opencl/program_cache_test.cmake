# cmake -DINFER_RUN=... -DPLUGIN_DIR=... -DMODEL=... -DCACHE_DIR=... -P program_cache_test.cmake
# MODEL is the digits demo (input "image", batch N given here); every node but ArgMax is
# pinned to opencl, since the scheduler would keep such a small model on cpu.
# Runs the model on the opencl device twice with an empty XDG_CACHE_HOME: the first start must
# compile the kernels and store them, the second must load them from the cache; a corrupt
# cache file must be rebuilt, not crash. Then the same for the fp16-storage variant of the
# program (--precision f16), which is cached beside the f32 one under its own key.
file(REMOVE_RECURSE "${CACHE_DIR}")
file(MAKE_DIRECTORY "${CACHE_DIR}")
set(ENV{XDG_CACHE_HOME} "${CACHE_DIR}")

function(run_once out_var)
  execute_process(
    COMMAND "${INFER_RUN}" --plugin "${PLUGIN_DIR}" --no-default-plugins --device opencl,cpu
            --place "*=opencl" --place "ArgMax=cpu" --log-level info --shape image=2x1x8x8
            ${ARGN} "${MODEL}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    if(err MATCHES "unavailable" OR err MATCHES "no OpenCL")
      message(STATUS "SKIP: no OpenCL device: ${err}")
      set(${out_var} "SKIP" PARENT_SCOPE)
      return()
    endif()
    message(FATAL_ERROR "infer-run failed (${rc}):\n${out}\n${err}")
  endif()
  set(${out_var} "${err}" PARENT_SCOPE)
endfunction()

run_once(first)
if(first STREQUAL "SKIP")
  return()
endif()
if(NOT first MATCHES "kernels compiled from source")
  message(FATAL_ERROR "first start: expected a compile from source, got:\n${first}")
endif()
file(GLOB binaries "${CACHE_DIR}/loom/opencl/*.bin")
list(LENGTH binaries count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "first start: expected one cached program, found ${count}: ${binaries}")
endif()

run_once(second)
if(NOT second MATCHES "kernels loaded from the cache")
  message(FATAL_ERROR "second start: expected a cache hit, got:\n${second}")
endif()

# A truncated cache file is detected and replaced.
file(WRITE "${binaries}" "LOOMCLB1")
run_once(third)
if(NOT third MATCHES "kernels compiled from source")
  message(FATAL_ERROR "corrupt cache: expected a rebuild, got:\n${third}")
endif()
run_once(fourth)
if(NOT fourth MATCHES "kernels loaded from the cache")
  message(FATAL_ERROR "after the rebuild: expected a cache hit, got:\n${fourth}")
endif()

# The fp16-storage variant: compiled once, stored as a second file, then loaded.
run_once(f16_first --precision f16)
if(NOT f16_first MATCHES "kernels \\(f16 storage\\) compiled from source")
  message(FATAL_ERROR "first f16 start: expected a compile from source, got:\n${f16_first}")
endif()
file(GLOB binaries "${CACHE_DIR}/loom/opencl/*.bin")
list(LENGTH binaries count)
if(NOT count EQUAL 2)
  message(FATAL_ERROR "after the f16 start: expected two cached programs, found ${count}")
endif()
run_once(f16_second --precision f16)
if(NOT f16_second MATCHES "kernels \\(f16 storage\\) loaded from the cache")
  message(FATAL_ERROR "second f16 start: expected a cache hit, got:\n${f16_second}")
endif()
run_once(f32_again)
if(NOT f32_again MATCHES "kernels loaded from the cache")
  message(FATAL_ERROR "f32 after f16: expected a cache hit, got:\n${f32_again}")
endif()
message(STATUS "program cache: compile, hit, rebuild after corruption, hit; f16 variant: "
               "compile, hit")

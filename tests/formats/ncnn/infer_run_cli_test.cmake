# infer-run on ncnn models, run by ctest as a script:
#   cmake -DRUN=infer-run -DPLUGINS="ncnn.so;cpu.so[;onednn.so]" -DMODELS=dir -DWORK=dir -P this
# A text .param and a binary .param.bin run on cpu (and on onednn,cpu when that plugin is
# given); a .param without its .bin fails with an error naming the missing file.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(plugin_args --no-default-plugins)
set(have_onednn OFF)
foreach(p IN LISTS PLUGINS)
  if(p)
    list(APPEND plugin_args --plugin "${p}")
    if(p MATCHES "onednn")
      set(have_onednn ON)
    endif()
  endif()
endforeach()

function(expect_exit code)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL code)
    message(FATAL_ERROR "expected exit ${code}, got ${rc} from: ${ARGN}\nstdout: ${out}\nstderr: ${err}")
  endif()
  set(last_stdout "${out}" PARENT_SCOPE)
  set(last_stderr "${err}" PARENT_SCOPE)
endfunction()

foreach(model small_cnn.param small_cnn_binary.param.bin memory_data_broadcast.param)
  string(REGEX REPLACE "\\.param(\\.bin)?$" "" stem "${model}")
  set(inputs)
  # The binary param names blobs by index: the input is blob0.
  if(model MATCHES "\\.param\\.bin$")
    set(inputs -i "blob0=${MODELS}/${stem}.input.npy")
  else()
    set(inputs -i "data=${MODELS}/${stem}.input.npy")
  endif()
  expect_exit(0 "${RUN}" ${plugin_args} --device cpu ${inputs} -o "${WORK}/${stem}-cpu"
              "${MODELS}/${model}")
  file(GLOB written "${WORK}/${stem}-cpu/*.npy")
  if(NOT written)
    message(FATAL_ERROR "infer-run wrote no output for ${model}:\n${last_stdout}")
  endif()
  if(have_onednn)
    expect_exit(0 "${RUN}" ${plugin_args} --device onednn,cpu --explain ${inputs}
                -o "${WORK}/${stem}-onednn" "${MODELS}/${model}")
    if(NOT last_stdout MATCHES "onednn")
      message(FATAL_ERROR "the plan of ${model} gives onednn nothing:\n${last_stdout}")
    endif()
  endif()
endforeach()

# Without its weights the model cannot load, and the error says which file is missing.
file(COPY "${MODELS}/small_cnn.param" DESTINATION "${WORK}/lonely")
execute_process(COMMAND "${RUN}" ${plugin_args} --device cpu "${WORK}/lonely/small_cnn.param"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "small_cnn.bin, which does not exist")
  message(FATAL_ERROR "a .param without its .bin: exit ${rc}\nstderr: ${err}")
endif()

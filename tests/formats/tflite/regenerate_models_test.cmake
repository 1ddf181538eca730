# ctest script: regenerate the TFLite test models with the TFLite interpreter and compare them
# (files and outputs) with the committed ones. The venv (system site packages visible, for
# numpy) is created on first use and gets the pinned PyPI packages.
#   -DVENV=dir -DSCRIPT=generate_models.py -DFLATC=flatc -DMODELS=committed dir -DWORK=out dir
set(python "${VENV}/bin/python")
if(NOT EXISTS "${python}")
  execute_process(COMMAND /usr/bin/python3 -m venv --system-site-packages "${VENV}"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cannot create the venv ${VENV}")
  endif()
endif()
execute_process(COMMAND "${python}" -c "import tflite_runtime, flatbuffers"
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 0)
  execute_process(COMMAND "${python}" -m pip install -q tflite-runtime==2.14.0 flatbuffers==2.0.7
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cannot install tflite-runtime==2.14.0 and flatbuffers==2.0.7 into ${VENV}")
  endif()
endif()
file(REMOVE_RECURSE "${WORK}")
execute_process(COMMAND "${python}" "${SCRIPT}" --out "${WORK}" --flatc "${FLATC}" --check "${MODELS}"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the regenerated TFLite models differ from the committed ones")
endif()

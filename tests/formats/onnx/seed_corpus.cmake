# Copies every file matching SEED_GLOB into CORPUS under a name unique per source directory
# (all seeds are called model.onnx): <suite>_<test>.onnx.
file(GLOB seeds "${SEED_GLOB}")
foreach(seed IN LISTS seeds)
  get_filename_component(test_dir "${seed}" DIRECTORY)
  get_filename_component(test "${test_dir}" NAME)
  get_filename_component(suite_dir "${test_dir}" DIRECTORY)
  get_filename_component(suite "${suite_dir}" NAME)
  configure_file("${seed}" "${CORPUS}/${suite}_${test}.onnx" COPYONLY)
endforeach()

# cmake -DPLUGIN=<file> -DDEST_DIR=<dir> -P link_plugin.cmake
# Puts one plugin file into a matrix combination's plugin directory as a hard link (no disk
# cost: a RelWithDebInfo loom_cpu.so is ~60 MB and appears in most combinations), or as a copy
# where the file system cannot link. The old entry is removed first, so a relinked plugin
# (a new inode) replaces it.
if(NOT PLUGIN OR NOT DEST_DIR)
  message(FATAL_ERROR "link_plugin.cmake: PLUGIN and DEST_DIR are required")
endif()
file(MAKE_DIRECTORY "${DEST_DIR}")
get_filename_component(name "${PLUGIN}" NAME)
file(REMOVE "${DEST_DIR}/${name}")
file(CREATE_LINK "${PLUGIN}" "${DEST_DIR}/${name}" COPY_ON_ERROR)

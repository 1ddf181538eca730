# Cross build for 64-bit Arm Linux with Debian's g++-aarch64-linux-gnu.
#
# The libraries Loom links (Boost, fmt, protobuf, ONNX, GoogleTest, CLI11) come from Debian's
# arm64 packages unpacked into LOOM_AARCH64_SYSROOT by .ci/aarch64-sysroot. That directory is a
# search root, not the compiler's --sysroot: the cross compiler keeps its own libc and libstdc++
# (/usr/aarch64-linux-gnu), which are the same glibc 2.36 / GCC 12 as the unpacked packages.
# protoc and other build-time programs are the host's.
#
# Tests run under qemu-aarch64 (Debian's qemu-user) through CMAKE_CROSSCOMPILING_EMULATOR, which
# ctest and gtest_discover_tests both honour.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT LOOM_AARCH64_SYSROOT)
  get_filename_component(_loom_repo "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
  set(LOOM_AARCH64_SYSROOT "${_loom_repo}/build/aarch64-sysroot")
endif()
set(LOOM_AARCH64_SYSROOT "${LOOM_AARCH64_SYSROOT}" CACHE PATH
    "Debian arm64 packages unpacked by .ci/aarch64-sysroot")
if(NOT EXISTS "${LOOM_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu")
  message(FATAL_ERROR "aarch64 sysroot '${LOOM_AARCH64_SYSROOT}' is missing or empty: "
                      "run .ci/aarch64-sysroot first (or set LOOM_AARCH64_SYSROOT)")
endif()
# try_compile projects inherit only listed variables.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES LOOM_AARCH64_SYSROOT)

set(CMAKE_FIND_ROOT_PATH "${LOOM_AARCH64_SYSROOT}" /usr/aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)  # protoc, python: the host's
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Shared libraries in the sysroot depend on others there (libprotobuf -> libz); the linker
# resolves those through rpath-link. Nothing sysroot-specific ends up in the binaries.
set(_loom_sysroot_libs
    "-Wl,-rpath-link,${LOOM_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu"
    "-Wl,-rpath-link,${LOOM_AARCH64_SYSROOT}/lib/aarch64-linux-gnu")
string(JOIN " " _loom_sysroot_link_flags ${_loom_sysroot_libs})
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_loom_sysroot_link_flags}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${_loom_sysroot_link_flags}")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "${_loom_sysroot_link_flags}")

find_program(LOOM_QEMU_AARCH64 qemu-aarch64 qemu-aarch64-static)
if(LOOM_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${LOOM_QEMU_AARCH64};-L;${LOOM_AARCH64_SYSROOT}")
else()
  message(WARNING "qemu-aarch64 not found (apt-get install qemu-user): tests cannot run")
endif()

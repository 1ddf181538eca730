// Checks a plugin file before dlopen sees it. glibc maps the segments a truncated ELF file
// promises and dies with SIGBUS touching them, so an incomplete or foreign file must be refused
// here, with a message a user can act on. Opening a FIFO, a terminal or a device for reading
// may block forever, so only regular files are opened at all.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace loom::core {

// "a FIFO (named pipe)", "a directory", "a character device"... for messages.
std::string file_kind(mode_t mode);

// Why `path` cannot be a plugin file, or "" when it names (through symlinks) a regular file:
// "symlink loop (...)", "no such file or directory", "a FIFO (named pipe), not a regular
// file...". Only stat()s the path: opens nothing.
std::string plugin_path_problem(const std::string& path);

// Warnings about who may replace `path` (a plugin file or directory): world-writable, or owned
// by a user other than root and the current one. Empty when there is nothing to say.
std::vector<std::string> write_access_warnings(const std::string& path);

// "" if `path` looks like a complete shared object for this machine, else the reason. Opens
// with O_NONBLOCK and checks that what it opened is a regular file (the path may have been
// swapped for a FIFO since it was stat()ed), so it never blocks.
std::string check_elf_file(const std::string& path);

}  // namespace loom::core

// Checks a shared object file before dlopen sees it. glibc maps the segments a truncated ELF
// file promises and dies with SIGBUS touching them, so an incomplete or foreign file must be
// refused here, with a message a user can act on.
#pragma once

#include <string>

namespace loom::core {

// "" if `path` looks like a complete shared object for this machine, else the reason.
std::string check_elf_file(const std::string& path);

}  // namespace loom::core

#include "elf_check.hpp"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <vector>

namespace loom::core {
namespace {

const char* machine_name(uint16_t m) {
  switch (m) {
    case EM_X86_64: return "x86_64";
    case EM_386: return "i386";
    case EM_AARCH64: return "aarch64";
    case EM_ARM: return "arm";
    case EM_RISCV: return "riscv";
    case EM_PPC64: return "ppc64";
    case EM_S390: return "s390x";
    default: return "another architecture";
  }
}

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#elif defined(__riscv)
constexpr uint16_t kHostMachine = EM_RISCV;
#else
constexpr uint16_t kHostMachine = EM_NONE;  // unknown host: skip the architecture check
#endif

}  // namespace

std::string check_elf_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "cannot read the file";
  const auto size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  Elf64_Ehdr eh;
  std::memset(&eh, 0, sizeof eh);
  in.read(reinterpret_cast<char*>(&eh), sizeof eh);
  if (size < SELFMAG || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return "not a shared library (no ELF header)";
  if (size < sizeof eh) return "truncated shared library (incomplete ELF header)";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return "not a 64-bit little-endian shared library";
  if (eh.e_type != ET_DYN) return "not a shared library (ELF type " + std::to_string(eh.e_type) + ")";
  if (kHostMachine != EM_NONE && eh.e_machine != kHostMachine)
    return std::string("built for ") + machine_name(eh.e_machine) + ", but this machine is " +
           machine_name(kHostMachine);
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0)
    return "damaged shared library (bad program headers)";
  uint64_t ph_end = eh.e_phoff + static_cast<uint64_t>(eh.e_phnum) * eh.e_phentsize;
  if (eh.e_phoff > size || ph_end > size) return "truncated shared library (program headers past the end of the file)";
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  in.seekg(static_cast<std::streamoff>(eh.e_phoff));
  in.read(reinterpret_cast<char*>(ph.data()), static_cast<std::streamsize>(ph.size() * sizeof(Elf64_Phdr)));
  if (!in) return "truncated shared library";
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type != PT_LOAD && p.p_type != PT_DYNAMIC) continue;
    if (p.p_offset > size || p.p_filesz > size - p.p_offset)
      return "truncated shared library (it is " + std::to_string(size) +
             " bytes, but its segments need " + std::to_string(p.p_offset + p.p_filesz) + ")";
  }
  return "";
}

}  // namespace loom::core

#include "elf_check.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
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

std::string not_regular(mode_t mode) {
  return file_kind(mode) + ", not a regular file: only shared libraries can be plugins";
}

// Reads exactly `size` bytes at `offset`; false on a short read or an error.
bool read_at(int fd, void* out, size_t size, uint64_t offset) {
  auto* p = static_cast<char*>(out);
  while (size > 0) {
    ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

std::string check_elf_fd(int fd, uint64_t size) {
  Elf64_Ehdr eh;
  std::memset(&eh, 0, sizeof eh);
  if (size >= SELFMAG && !read_at(fd, &eh, std::min<uint64_t>(size, sizeof eh), 0))
    return std::string("cannot read the file: ") + std::strerror(errno);
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
  if (!read_at(fd, ph.data(), ph.size() * sizeof(Elf64_Phdr), eh.e_phoff))
    return "truncated shared library";
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type != PT_LOAD && p.p_type != PT_DYNAMIC) continue;
    if (p.p_offset > size || p.p_filesz > size - p.p_offset)
      return "truncated shared library (it is " + std::to_string(size) +
             " bytes, but its segments need " + std::to_string(p.p_offset + p.p_filesz) + ")";
  }
  return "";
}

}  // namespace

std::string file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string plugin_path_problem(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ELOOP) return "symlink loop (too many levels of symbolic links): fix the link";
    if (err == ENOENT) {
      struct stat link;
      if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode))
        return "dangling symlink (its target does not exist)";
      return "no such file or directory";
    }
    return std::string("cannot stat the file: ") + std::strerror(err);
  }
  return S_ISREG(st.st_mode) ? "" : not_regular(st.st_mode);
}

std::vector<std::string> write_access_warnings(const std::string& path) {
  std::vector<std::string> out;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return out;
  const char* what = S_ISDIR(st.st_mode) ? "plugin directory " : "plugin file ";
  // Anyone who can write the file (or add files to the directory) can run code in this process.
  if (st.st_mode & S_IWOTH)
    out.push_back(what + path + " is world-writable: any user can replace the code Loom loads " +
                  "from it (chmod o-w it)");
  if (st.st_uid != 0 && st.st_uid != ::geteuid())
    out.push_back(what + path + " is owned by user " + std::to_string(st.st_uid) +
                  ", neither root nor the current user, who can replace the code Loom loads");
  return out;
}

std::string check_elf_file(const std::string& path) {
  // O_NONBLOCK: should the path have become a FIFO since it was checked, open() must not wait
  // for a writer. On a regular file the flag changes nothing.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ELOOP) return "symlink loop (too many levels of symbolic links): fix the link";
    return std::string("cannot read the file: ") + std::strerror(err);
  }
  struct stat st;
  std::string why;
  if (::fstat(fd, &st) != 0)
    why = std::string("cannot stat the file: ") + std::strerror(errno);
  else if (!S_ISREG(st.st_mode))
    why = not_regular(st.st_mode);
  else
    why = check_elf_fd(fd, static_cast<uint64_t>(st.st_size));
  ::close(fd);
  return why;
}

}  // namespace loom::core

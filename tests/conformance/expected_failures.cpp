#include "expected_failures.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace loom::conformance {
namespace {

std::string trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  size_t end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

// Reasons are free text from failure messages: keep them on one line and readable.
std::string one_line(const std::string& reason) {
  std::string out;
  for (char c : reason) out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  constexpr size_t kMaxReason = 240;
  if (out.size() > kMaxReason) out = out.substr(0, kMaxReason - 3) + "...";
  return out;
}

}  // namespace

std::map<std::string, std::string> parse_expected_failures(const std::string& text,
                                                           const std::string& what) {
  std::map<std::string, std::string> entries;
  std::istringstream in(text);
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    size_t hash = line.find('#');
    std::string id = trim(line.substr(0, hash));
    std::string reason = hash == std::string::npos ? "" : trim(line.substr(hash + 1));
    if (id.empty()) continue;
    size_t slash = id.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == id.size() ||
        id.find_first_of(" \t/", slash + 1) != std::string::npos)
      throw std::runtime_error(fmt::format("{}:{}: expected '<suite>/<test>  # reason', got '{}'",
                                           what, number, trim(line)));
    if (!entries.emplace(id, reason).second)
      throw std::runtime_error(fmt::format("{}:{}: '{}' is listed twice", what, number, id));
  }
  return entries;
}

std::map<std::string, std::string> read_expected_failures(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot read expected failures {}", path));
  std::stringstream text;
  text << in.rdbuf();
  return parse_expected_failures(text.str(), path);
}

void write_expected_failures(const std::string& path,
                             const std::map<std::string, std::string>& failures,
                             const std::string& header) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
  std::istringstream lines(header);
  std::string line;
  while (std::getline(lines, line)) out << "# " << line << "\n";
  size_t width = 0;
  for (const auto& [id, reason] : failures) width = std::max(width, id.size());
  for (const auto& [id, reason] : failures)
    out << fmt::format("{:<{}}  # {}\n", id, width, one_line(reason));
  if (!out) throw std::runtime_error(fmt::format("error writing {}", path));
}

}  // namespace loom::conformance

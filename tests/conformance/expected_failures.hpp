// The expected-failures file of a device set: one test per line, "<suite>/<test>  # reason".
// Blank lines and lines starting with '#' are comments.
#pragma once

#include <map>
#include <string>

namespace loom::conformance {

// test id -> reason ("" when the line has none). Throws std::runtime_error naming the file and
// line on an unreadable file or a malformed entry.
std::map<std::string, std::string> read_expected_failures(const std::string& path);
std::map<std::string, std::string> parse_expected_failures(const std::string& text,
                                                           const std::string& what);

// Writes `failures` (id -> reason, reasons flattened to one line) in the same format, sorted,
// with a header saying how the file was made.
void write_expected_failures(const std::string& path,
                             const std::map<std::string, std::string>& failures,
                             const std::string& header);

}  // namespace loom::conformance

#include <fmt/format.h>

#include <cmath>
#include <loom_apps/json_writer.hpp>
#include <stdexcept>

namespace loom::apps {

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_element_.empty()) {
    if (has_element_.back()) out_ += ',';
    has_element_.back() = true;
  }
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  has_element_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  if (has_element_.empty()) throw std::logic_error("JsonWriter: end_object without begin");
  has_element_.pop_back();
  out_ += '}';
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  has_element_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  if (has_element_.empty()) throw std::logic_error("JsonWriter: end_array without begin");
  has_element_.pop_back();
  out_ += ']';
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  before_value();
  out_ += escape(name);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  out_ += escape(s);
  return *this;
}

JsonWriter& JsonWriter::value(double d) {
  before_value();
  if (std::isnan(d))
    out_ += "\"NaN\"";
  else if (std::isinf(d))
    out_ += d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  else
    out_ += fmt::format("{}", d);  // shortest representation that round-trips
  return *this;
}

JsonWriter& JsonWriter::value(int64_t i) {
  before_value();
  out_ += fmt::format("{}", i);
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t u) {
  before_value();
  out_ += fmt::format("{}", u);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  before_value();
  out_ += json;
  return *this;
}

std::string JsonWriter::escape(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else
          out += c;  // UTF-8 passes through unchanged
    }
  }
  out += '"';
  return out;
}

}  // namespace loom::apps

// A minimal streaming JSON writer (no DOM): infer-run emits one object on stdout with it.
// Non-finite floats, which JSON cannot hold, are written as the strings "NaN", "Infinity" and
// "-Infinity" (the spelling Python's json module and JavaScript use).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::apps {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);  // inside an object, before each value
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s ? s : "")); }
  JsonWriter& value(double d);
  JsonWriter& value(int64_t i);
  JsonWriter& value(uint64_t u);
  JsonWriter& value(int i) { return value(static_cast<int64_t>(i)); }
  JsonWriter& value(bool b);
  JsonWriter& null();
  // Inserts `json` verbatim as a value (e.g. the core's plan JSON). The caller vouches for it.
  JsonWriter& raw(std::string_view json);

  const std::string& str() const { return out_; }

  static std::string escape(std::string_view s);  // with the surrounding quotes

 private:
  void before_value();
  std::string out_;
  // One entry per open container: true once it holds an element (a comma is due).
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

}  // namespace loom::apps

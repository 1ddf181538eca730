// A small JSON document model for Triton's model configuration and backend settings, which the
// server hands over as JSON text (protobuf's JSON mapping) and takes back the same way. Numbers
// keep their text, so that 64-bit integers (which protobuf also writes as strings) survive a
// round trip exactly; no Debian 12 package of the project's dependencies offers a JSON parser.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::triton {

class Json {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Json() = default;
  static Json boolean(bool value);
  static Json number(int64_t value);
  static Json number_text(std::string text);  // a number as written in JSON text
  static Json string(std::string value);
  static Json array();
  static Json object();

  // Throws std::runtime_error naming the offset of the first error.
  static Json parse(std::string_view text);
  std::string dump() const;

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_object() const { return kind_ == Kind::Object; }

  // A string's value or a number's text ("" for anything else).
  const std::string& text() const { return text_; }
  bool as_bool() const { return kind_ == Kind::Bool && bool_; }
  // An integer from a number or a string holding one (protobuf writes int64 as strings);
  // nullopt when it is neither.
  std::optional<int64_t> as_int() const;

  // Arrays.
  const std::vector<Json>& items() const { return items_; }
  void push_back(Json value) { items_.push_back(std::move(value)); }

  // Objects: members in the order read or set. find returns nullptr when absent.
  const Json* find(std::string_view key) const;
  Json* find(std::string_view key);
  void set(std::string_view key, Json value);
  const std::vector<std::pair<std::string, Json>>& members() const { return members_; }

 private:
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  std::string text_;
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
};

}  // namespace loom::triton

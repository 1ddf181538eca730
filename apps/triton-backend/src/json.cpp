#include "json.hpp"

#include <charconv>
#include <stdexcept>

namespace loom::triton {

Json Json::boolean(bool value) {
  Json j;
  j.kind_ = Kind::Bool;
  j.bool_ = value;
  return j;
}

Json Json::number(int64_t value) {
  Json j;
  j.kind_ = Kind::Number;
  j.text_ = std::to_string(value);
  return j;
}

Json Json::number_text(std::string text) {
  Json j;
  j.kind_ = Kind::Number;
  j.text_ = std::move(text);
  return j;
}

Json Json::string(std::string value) {
  Json j;
  j.kind_ = Kind::String;
  j.text_ = std::move(value);
  return j;
}

Json Json::array() {
  Json j;
  j.kind_ = Kind::Array;
  return j;
}

Json Json::object() {
  Json j;
  j.kind_ = Kind::Object;
  return j;
}

std::optional<int64_t> Json::as_int() const {
  if (kind_ != Kind::Number && kind_ != Kind::String) return std::nullopt;
  int64_t value = 0;
  const char* end = text_.data() + text_.size();
  auto [ptr, ec] = std::from_chars(text_.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

const Json* Json::find(std::string_view key) const {
  for (const auto& [name, value] : members_)
    if (name == key) return &value;
  return nullptr;
}

Json* Json::find(std::string_view key) {
  for (auto& [name, value] : members_)
    if (name == key) return &value;
  return nullptr;
}

void Json::set(std::string_view key, Json value) {
  if (Json* existing = find(key)) {
    *existing = std::move(value);
    return;
  }
  members_.emplace_back(std::string(key), std::move(value));
}

namespace {

// Recursive descent over the text; depth-bounded because the text comes from the server but
// holds a user's config.pbtxt.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Json document() {
    Json value = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) fail("text after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(pos_));
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\t'))
      ++pos_;
  }

  bool consume(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }

  bool consume_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  Json parse_value(int depth) {
    if (depth > 64) fail("nesting deeper than 64");
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    char c = text_[pos_];
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return Json::string(parse_string());
    if (consume_word("true")) return Json::boolean(true);
    if (consume_word("false")) return Json::boolean(false);
    if (consume_word("null")) return Json();
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number();
    fail(std::string("unexpected character '") + c + "'");
  }

  Json parse_object(int depth) {
    expect('{');
    Json object = Json::object();
    if (consume('}')) return object;
    do {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a member name");
      std::string key = parse_string();
      expect(':');
      object.set(key, parse_value(depth + 1));
    } while (consume(','));
    expect('}');
    return object;
  }

  Json parse_array(int depth) {
    expect('[');
    Json array = Json::array();
    if (consume(']')) return array;
    do {
      array.push_back(parse_value(depth + 1));
    } while (consume(','));
    expect(']');
    return array;
  }

  Json parse_number() {
    size_t start = pos_;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')
        ++pos_;
      else
        break;
    }
    // Kept as written: integers of any size and decimals pass through unchanged.
    return Json::number_text(std::string(text_.substr(start, pos_ - start)));
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  uint32_t parse_hex4() {
    if (pos_ + 4 > text_.size()) fail("short \\u escape");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      value <<= 4;
      if (c >= '0' && c <= '9')
        value |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        value |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        value |= static_cast<uint32_t>(c - 'A' + 10);
      else
        fail("bad \\u escape");
    }
    return value;
  }

  std::string parse_string() {
    ++pos_;  // the opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = parse_hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && text_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            uint32_t low = parse_hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

void dump_string(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
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
        if (c < 0x20) {
          static const char hex[] = "0123456789abcdef";
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void dump_value(const Json& value, std::string& out) {
  switch (value.kind()) {
    case Json::Kind::Null:
      out += "null";
      break;
    case Json::Kind::Bool:
      out += value.as_bool() ? "true" : "false";
      break;
    case Json::Kind::Number:
      out += value.text();
      break;
    case Json::Kind::String:
      dump_string(value.text(), out);
      break;
    case Json::Kind::Array: {
      out += '[';
      bool first = true;
      for (const Json& item : value.items()) {
        if (!first) out += ',';
        first = false;
        dump_value(item, out);
      }
      out += ']';
      break;
    }
    case Json::Kind::Object: {
      out += '{';
      bool first = true;
      for (const auto& [key, member] : value.members()) {
        if (!first) out += ',';
        first = false;
        dump_string(key, out);
        out += ':';
        dump_value(member, out);
      }
      out += '}';
      break;
    }
  }
}

}  // namespace

Json Json::parse(std::string_view text) {
  return Parser(text).document();
}

std::string Json::dump() const {
  std::string out;
  dump_value(*this, out);
  return out;
}

}  // namespace loom::triton

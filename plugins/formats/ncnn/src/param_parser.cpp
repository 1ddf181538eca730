#include "param_parser.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <loom/plugin.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "layer_type_index.hpp"

namespace loom::ncnnfmt {
namespace {

[[noreturn]] void bad(const std::string& message) {
  sdk::fail(LOOM_ERROR_INVALID_MODEL, "ncnn param: " + message);
}

// ---- text ----------------------------------------------------------------------------------

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") != std::string_view::npos) lines.push_back(line);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
  }
  return lines;
}

std::vector<std::string_view> split_tokens(std::string_view line) {
  std::vector<std::string_view> tokens;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) tokens.push_back(line.substr(start, i - start));
  }
  return tokens;
}

int64_t parse_int(std::string_view token, const std::string& what) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (ec != std::errc() || end != token.data() + token.size())
    bad(what + " '" + std::string(token) + "' is not an integer");
  return value;
}

ParamValue parse_value(std::string_view token, const std::string& what) {
  ParamValue v;
  if (token.find_first_of(".eE") != std::string_view::npos) {
    std::string text(token);
    char* end = nullptr;
    v.f = std::strtof(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v.f))
      bad(what + " '" + text + "' is not a finite number");
    v.i = (std::fabs(v.f) < 2.0e9f) ? static_cast<int32_t>(v.f) : 0;
    return v;
  }
  int64_t i = parse_int(token, what);
  if (i < INT32_MIN || i > INT32_MAX) bad(what + " '" + std::string(token) + "' is out of range");
  v.i = static_cast<int32_t>(i);
  v.f = static_cast<float>(v.i);
  return v;
}

void parse_text_params(const std::vector<std::string_view>& tokens, size_t first, Layer& layer) {
  for (size_t t = first; t < tokens.size(); ++t) {
    std::string_view token = tokens[t];
    size_t eq = token.find('=');
    std::string where = "layer '" + layer.name + "': parameter";
    if (eq == std::string_view::npos || eq == 0)
      bad(where + " '" + std::string(token) + "' is not ID=VALUE");
    int64_t id = parse_int(token.substr(0, eq), where + " id");
    // Ids are small; arrays use -23300-k. Bounding first keeps the arithmetic below in range.
    if (id < -23300 - 1000000 || id > 1000000)
      bad(where + " id " + std::to_string(id) + " is out of range");
    std::string_view value = token.substr(eq + 1);
    if (id <= -23300) {
      int64_t array_id = -id - 23300;
      if (array_id > 1000000) bad(where + " id " + std::to_string(id) + " is out of range");
      size_t comma = value.find(',');
      int64_t count = parse_int(value.substr(0, comma), where + " array length");
      std::vector<ParamValue> items;
      std::string_view rest =
          comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
      if (count < 0 || static_cast<size_t>(count) > rest.size())
        bad(where + " array " + std::to_string(array_id) + " claims " + std::to_string(count) +
            " items but the line holds fewer");
      for (int64_t k = 0; k < count; ++k) {
        size_t c = rest.find(',');
        if ((k + 1 < count) == (c == std::string_view::npos))
          bad(where + " array " + std::to_string(array_id) + " has not " + std::to_string(count) +
              " items");
        items.push_back(parse_value(rest.substr(0, c), where + " array item"));
        rest = c == std::string_view::npos ? std::string_view{} : rest.substr(c + 1);
      }
      if (layer.params.has(static_cast<int>(array_id)))
        bad(where + " " + std::to_string(id) + " is given twice");
      layer.params.set_array(static_cast<int>(array_id), std::move(items));
    } else {
      if (id < 0 || id > 1000000) bad(where + " id " + std::to_string(id) + " is out of range");
      if (layer.params.has(static_cast<int>(id)))
        bad(where + " " + std::to_string(id) + " is given twice");
      layer.params.set(static_cast<int>(id), parse_value(value, where + " value"));
    }
  }
}

// ---- binary --------------------------------------------------------------------------------

class WordReader {
 public:
  WordReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  int32_t next(const char* what) {
    if (size_ - pos_ < 4)
      bad(std::string("the binary param ends early (reading ") + what + " at byte " +
          std::to_string(pos_) + ")");
    uint32_t w = static_cast<uint32_t>(data_[pos_]) |
                 (static_cast<uint32_t>(data_[pos_ + 1]) << 8) |
                 (static_cast<uint32_t>(data_[pos_ + 2]) << 16) |
                 (static_cast<uint32_t>(data_[pos_ + 3]) << 24);
    pos_ += 4;
    int32_t value;
    std::memcpy(&value, &w, 4);
    return value;
  }
  size_t words_left() const { return (size_ - pos_) / 4; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

ParamValue raw_value(int32_t word) {
  ParamValue v;
  v.i = word;
  std::memcpy(&v.f, &word, 4);
  return v;
}

void parse_binary_params(WordReader& r, Layer& layer) {
  for (;;) {
    int32_t id = r.next("a parameter id");
    if (id == -233) return;  // the end-of-params marker
    if (id <= -23300) {
      int64_t array_id = -static_cast<int64_t>(id) - 23300;
      int32_t count = r.next("an array length");
      if (count < 0 || static_cast<size_t>(count) > r.words_left())
        bad(layer.name + ": array parameter " + std::to_string(array_id) + " claims " +
            std::to_string(count) + " items, more than the file holds");
      std::vector<ParamValue> items;
      for (int32_t k = 0; k < count; ++k) items.push_back(raw_value(r.next("an array item")));
      layer.params.set_array(static_cast<int>(array_id), std::move(items));
    } else {
      if (id < 0) bad(layer.name + ": parameter id " + std::to_string(id) + " is invalid");
      layer.params.set(id, raw_value(r.next("a parameter value")));
    }
  }
}

void check_counts(int64_t layers, int64_t blobs) {
  if (layers <= 0 || layers > kMaxLayers)
    bad("layer count " + std::to_string(layers) + " is out of range (1.." +
        std::to_string(kMaxLayers) + ")");
  if (blobs <= 0 || blobs > kMaxBlobs)
    bad("blob count " + std::to_string(blobs) + " is out of range (1.." +
        std::to_string(kMaxBlobs) + ")");
}

void check_io_count(int64_t count, const std::string& what, const std::string& layer) {
  if (count < 0 || count > kMaxLayerIo)
    bad("layer '" + layer + "': " + what + " count " + std::to_string(count) +
        " is out of range (0.." + std::to_string(kMaxLayerIo) + ")");
}

}  // namespace

bool is_binary_param(const uint8_t* data, size_t size) {
  return size >= 4 && data[0] == 0xdd && data[1] == 0x85 && data[2] == 0x76 && data[3] == 0x00;
}

int32_t probe_param(const uint8_t* head, size_t size) {
  if (!head) return 0;
  if (size >= 7 && std::memcmp(head, "7767517", 7) == 0 &&
      (size == 7 || head[7] == '\n' || head[7] == '\r' || head[7] == ' '))
    return 100;
  return is_binary_param(head, size) ? 90 : 0;
}

ParsedParam parse_text_param(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (text.find('\0') != std::string_view::npos) bad("the text param contains a NUL byte");
  std::vector<std::string_view> lines = split_lines(text);
  if (lines.empty() || split_tokens(lines[0]).size() != 1 || split_tokens(lines[0])[0] != "7767517")
    bad("the first line is not the magic number 7767517 (not an ncnn .param file?)");
  if (lines.size() < 2) bad("the layer and blob counts are missing");
  std::vector<std::string_view> counts = split_tokens(lines[1]);
  if (counts.size() != 2) bad("the second line must hold the layer count and the blob count");
  int64_t layer_count = parse_int(counts[0], "layer count");
  int64_t blob_count = parse_int(counts[1], "blob count");
  check_counts(layer_count, blob_count);
  if (static_cast<size_t>(layer_count) != lines.size() - 2)
    bad("the header says " + std::to_string(layer_count) + " layers but the file has " +
        std::to_string(lines.size() - 2) + " layer lines");

  ParsedParam parsed;
  for (size_t l = 2; l < lines.size(); ++l) {
    std::vector<std::string_view> tokens = split_tokens(lines[l]);
    std::string line_no = "line " + std::to_string(l + 1);
    if (tokens.size() < 4) bad(line_no + ": a layer needs TYPE NAME BOTTOMS TOPS");
    Layer layer;
    layer.type = tokens[0];
    layer.name = tokens[1];
    int64_t nb = parse_int(tokens[2], line_no + ": bottom count");
    int64_t nt = parse_int(tokens[3], line_no + ": top count");
    check_io_count(nb, "bottom", layer.name);
    check_io_count(nt, "top", layer.name);
    if (tokens.size() < 4 + static_cast<size_t>(nb + nt))
      bad("layer '" + layer.name + "' lists fewer blob names than its counts say (" +
          std::to_string(nb) + " bottoms, " + std::to_string(nt) + " tops)");
    for (int64_t i = 0; i < nb; ++i) layer.bottoms.emplace_back(tokens[4 + i]);
    for (int64_t i = 0; i < nt; ++i) layer.tops.emplace_back(tokens[4 + nb + i]);
    parse_text_params(tokens, 4 + static_cast<size_t>(nb + nt), layer);
    parsed.layers.push_back(std::move(layer));
  }
  return parsed;
}

ParsedParam parse_binary_param(const uint8_t* data, size_t size) {
  WordReader r(data, size);
  if (r.next("the magic") != kParamMagic) bad("the binary param does not start with 7767517");
  int32_t layer_count = r.next("the layer count");
  int32_t blob_count = r.next("the blob count");
  check_counts(layer_count, blob_count);
  // Every layer takes at least four words (type, two counts, end marker).
  if (static_cast<size_t>(layer_count) > r.words_left() / 4)
    bad("layer count " + std::to_string(layer_count) + " is larger than the file can hold");

  ParsedParam parsed;
  parsed.binary = true;
  auto blob_name = [&](int32_t index, const std::string& layer) {
    if (index < 0 || index >= blob_count)
      bad("layer '" + layer + "' names blob " + std::to_string(index) + " but there are " +
          std::to_string(blob_count) + " blobs");
    return "blob" + std::to_string(index);
  };
  for (int32_t l = 0; l < layer_count; ++l) {
    Layer layer;
    layer.name = "layer" + std::to_string(l);
    int32_t type_index = r.next("a layer type");
    if (type_index & 0x100)
      bad("layer " + std::to_string(l) + " is custom layer type " +
          std::to_string(type_index & 0xff) + ", which only its own application can run");
    layer.type = layer_type_name(type_index);
    if (layer.type.empty())
      bad("layer " + std::to_string(l) + " has unknown layer type index " +
          std::to_string(type_index));
    int32_t nb = r.next("a bottom count");
    int32_t nt = r.next("a top count");
    check_io_count(nb, "bottom", layer.name);
    check_io_count(nt, "top", layer.name);
    for (int32_t i = 0; i < nb; ++i)
      layer.bottoms.push_back(blob_name(r.next("a bottom"), layer.name));
    for (int32_t i = 0; i < nt; ++i) layer.tops.push_back(blob_name(r.next("a top"), layer.name));
    parse_binary_params(r, layer);
    parsed.layers.push_back(std::move(layer));
  }
  if (r.words_left() != 0)
    bad(std::to_string(r.words_left() * 4) + " stray bytes after the last layer");
  return parsed;
}

}  // namespace loom::ncnnfmt

// ncnn layer parameters: `id=value` pairs, where ids <= -23300 carry arrays (id -23300-k is
// array k). Text params say whether a value is a float (it has '.', 'e' or 'E'); binary params
// store raw 32-bit words, so each value keeps both readings and the layer picks the one it needs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loom::ncnnfmt {

// The value ncnn writes for "not given" in many params (and "SAME_UPPER" in padding params).
inline constexpr int32_t kNotGiven = -233;

struct ParamValue {
  int32_t i = 0;
  float f = 0.f;
};

class ParamDict {
 public:
  void set(int id, ParamValue v) { scalars_[id] = v; }
  void set_array(int id, std::vector<ParamValue> v) { arrays_[id] = std::move(v); }
  bool has(int id) const { return scalars_.count(id) || arrays_.count(id); }

  int32_t get_int(int id, int32_t fallback) const {
    auto it = scalars_.find(id);
    return it == scalars_.end() ? fallback : it->second.i;
  }
  float get_float(int id, float fallback) const {
    auto it = scalars_.find(id);
    return it == scalars_.end() ? fallback : it->second.f;
  }
  std::vector<int32_t> get_ints(int id) const {
    std::vector<int32_t> out;
    if (auto it = arrays_.find(id); it != arrays_.end())
      for (const ParamValue& v : it->second) out.push_back(v.i);
    return out;
  }
  std::vector<float> get_floats(int id) const {
    std::vector<float> out;
    if (auto it = arrays_.find(id); it != arrays_.end())
      for (const ParamValue& v : it->second) out.push_back(v.f);
    return out;
  }

 private:
  std::map<int, ParamValue> scalars_;
  std::map<int, std::vector<ParamValue>> arrays_;
};

// One layer line of a .param file (text) or its record in a .param.bin.
struct Layer {
  std::string type;
  std::string name;
  std::vector<std::string> bottoms;  // blob names
  std::vector<std::string> tops;
  ParamDict params;
};

struct ParsedParam {
  std::vector<Layer> layers;
  bool binary = false;
};

}  // namespace loom::ncnnfmt

#include "ops/window_attrs.hpp"

namespace loom::neon {
namespace {

std::string check_list(const Attributes& attrs, const char* name, size_t count, int64_t min) {
  auto values = attrs.get_ints(name);
  if (!values) return "";
  if (values->size() != count)
    return std::string(name) + " has " + std::to_string(values->size()) + " entries, " +
           std::to_string(count) + " expected for a 2-D window";
  for (int64_t v : *values)
    if (v < min) return std::string(name) + " holds " + std::to_string(v);
  return "";
}

}  // namespace

std::string check_window_attrs(const loom_node_t& node, bool allow_dilations) {
  Attributes attrs(node);
  for (auto [name, count, min] :
       {std::tuple{"strides", 2, 1}, std::tuple{"pads", 4, 0}, std::tuple{"dilations", 2, 1}}) {
    std::string r = check_list(attrs, name, static_cast<size_t>(count), min);
    if (!r.empty()) return r;
  }
  if (!allow_dilations)
    if (auto d = attrs.get_ints("dilations"); d && ((*d)[0] != 1 || (*d)[1] != 1))
      return "dilations other than 1 are not implemented for this op";
  if (std::string auto_pad = attrs.get_string("auto_pad", "NOTSET"); !sdk::parse_auto_pad(auto_pad))
    return "unknown auto_pad '" + auto_pad + "'";
  return "";
}

WindowAttrs read_window_attrs(const loom_node_t& node, int64_t kh, int64_t kw) {
  Attributes attrs(node);
  WindowAttrs a;
  a.kernel[0] = kh;
  a.kernel[1] = kw;
  if (auto s = attrs.get_ints("strides")) a.strides[0] = (*s)[0], a.strides[1] = (*s)[1];
  if (auto d = attrs.get_ints("dilations")) a.dilations[0] = (*d)[0], a.dilations[1] = (*d)[1];
  if (auto p = attrs.get_ints("pads"))
    for (int i = 0; i < 4; ++i) a.pads[i] = (*p)[static_cast<size_t>(i)];
  a.auto_pad = sdk::auto_pad_of(attrs, where(node));
  a.ceil_mode = attrs.get_int("ceil_mode", 0) != 0;
  return a;
}

}  // namespace loom::neon

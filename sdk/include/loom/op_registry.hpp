// One op registry for every device: entries keyed by domain, op type and the opset version they
// implement since, found the way ONNX versions operators (the entry with the highest `since` not
// above the model's opset; a newer registration ends the older one's range). "" and "ai.onnx"
// name the same (default) domain. Header-only.
//
//   sdk::OpRegistry<MyOp> ops;
//   ops.add("Relu", {check_relu, lower_relu});             // ONNX domain, every opset
//   ops.add("", "Resize", {check_resize11, lower_resize}, 11);
//   const MyOp* op = ops.find(node.domain, node.op_type, node.opset);
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::sdk {

template <class Entry>
class OpRegistry {
 public:
  // `entry` for op `op` of the default domain, from opset 1 on.
  void add(std::string_view op, Entry entry) { add("", op, std::move(entry), 1); }
  // `entry` for (domain, op) from opset `since` on, until a later `since` of the same op.
  void add(std::string_view domain, std::string_view op, Entry entry, int64_t since = 1) {
    items_.push_back({std::string(canonical(domain)), std::string(op), since, std::move(entry)});
  }

  // The entry for a node of (domain, op) in a model of `opset` (its version of that domain),
  // or nullptr: no such op, or only versions newer than the model's.
  const Entry* find(std::string_view domain, std::string_view op, int64_t opset) const {
    domain = canonical(domain);
    const Item* best = nullptr;
    for (const Item& item : items_)
      if (item.domain == domain && item.op == op && item.since <= opset &&
          (!best || item.since > best->since))
        best = &item;
    return best ? &best->entry : nullptr;
  }
  // Any version of (domain, op): for a device that handles the versions inside its entry.
  const Entry* find_any(std::string_view domain, std::string_view op) const {
    return find(domain, op, INT64_MAX);
  }
  bool contains(std::string_view domain, std::string_view op) const {
    return find_any(domain, op) != nullptr;
  }

  // "Relu", "com.microsoft::Gelu"...: every op once, sorted (for listings and tests).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Item& item : items_)
      out.push_back(item.domain.empty() ? item.op : item.domain + "::" + item.op);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

 private:
  struct Item {
    std::string domain;
    std::string op;
    int64_t since;
    Entry entry;
  };
  static std::string_view canonical(std::string_view domain) {
    return domain == "ai.onnx" ? std::string_view{} : domain;
  }
  std::vector<Item> items_;
};

}  // namespace loom::sdk

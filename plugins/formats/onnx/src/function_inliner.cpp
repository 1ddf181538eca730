#include "function_inliner.hpp"

#include <google/protobuf/unknown_field_set.h>

#include <loom/plugin.hpp>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "dtypes.hpp"
#include "graph_loader.hpp"
#include "model_parser.hpp"

namespace loom::onnx {
namespace {

using Key = std::tuple<std::string, std::string, std::string>;  // domain, name, overload

// Fields newer than the ONNX 1.12 protos we build against arrive as unknown fields.
constexpr int kFunctionAttributeProtoField = 11;  // FunctionProto.attribute_proto (IR 9)
constexpr int kFunctionOverloadField = 13;        // FunctionProto.overload (IR 10)
constexpr int kNodeOverloadField = 8;             // NodeProto.overload (IR 10)

std::string unknown_string(const google::protobuf::UnknownFieldSet& fields, int number) {
  for (int i = 0; i < fields.field_count(); ++i) {
    const auto& f = fields.field(i);
    if (f.number() == number && f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      return f.length_delimited();
  }
  return "";
}

std::string display(const Key& k) {
  std::string s = std::get<0>(k).empty() ? std::get<1>(k) : std::get<0>(k) + "." + std::get<1>(k);
  if (!std::get<2>(k).empty()) s += ":" + std::get<2>(k);
  return s;
}

struct Function {
  const ::onnx::FunctionProto* proto;
  std::map<std::string, ::onnx::AttributeProto> defaults;  // from attribute_proto (IR 9)
  int64_t nodes = 0;  // in the body, subgraphs included: what one expansion copies
};

int64_t deep_node_count(const google::protobuf::RepeatedPtrField<::onnx::NodeProto>& nodes) {
  int64_t n = nodes.size();
  for (const auto& node : nodes)
    for (const auto& a : node.attribute()) {
      if (a.has_g()) n += deep_node_count(a.g().node());
      for (const auto& sub : a.graphs()) n += deep_node_count(sub.node());
    }
  return n;
}

class Inliner {
 public:
  explicit Inliner(::onnx::ModelProto& model) : model_(model) {
    for (const auto& op : model.opset_import())
      opsets_.emplace(normalize_domain(op.domain()), op.version());
    for (const auto& f : model.functions()) {
      Key key{normalize_domain(f.domain()), f.name(),
              unknown_string(f.unknown_fields(), kFunctionOverloadField)};
      Function fn{&f, {}, deep_node_count(f.node())};
      const auto& unknown = f.unknown_fields();
      for (int i = 0; i < unknown.field_count(); ++i) {
        const auto& field = unknown.field(i);
        if (field.number() != kFunctionAttributeProtoField ||
            field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
          continue;
        ::onnx::AttributeProto a;
        if (!a.ParseFromString(field.length_delimited()))
          sdk::fail(LOOM_ERROR_INVALID_MODEL,
                    "function " + quote_name(display(key)) + ": an attribute default is corrupt");
        fn.defaults[a.name()] = std::move(a);
      }
      if (!functions_.emplace(key, std::move(fn)).second)
        sdk::fail(LOOM_ERROR_INVALID_MODEL,
                  "model-local function " + quote_name(display(key)) + " is defined twice");
    }
    collect_names(model.graph());
  }

  void run() { inline_graph(*model_.mutable_graph(), 0, 0); }

 private:
  void collect_names(const ::onnx::GraphProto& g) {
    for (const auto& v : g.input()) used_.insert(v.name());
    for (const auto& t : g.initializer()) used_.insert(t.name());
    for (const auto& n : g.node()) {
      for (const auto& o : n.output()) used_.insert(o);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) collect_names(a.g());
        for (const auto& sub : a.graphs()) collect_names(sub);
      }
    }
  }

  // A name no value of the model uses yet. Suffixes continue per base, so making many names
  // from one base stays linear.
  std::string fresh(const std::string& base) {
    std::string name = base;
    if (used_.count(name)) {
      int& next = next_suffix_[base];
      do name = base + "_" + std::to_string(++next);
      while (used_.count(name));
    }
    used_.insert(name);
    return name;
  }

  const Function* callee(const ::onnx::NodeProto& node) const {
    if (functions_.empty()) return nullptr;
    Key key{normalize_domain(node.domain()), node.op_type(),
            unknown_string(node.unknown_fields(), kNodeOverloadField)};
    auto it = functions_.find(key);
    return it == functions_.end() ? nullptr : &it->second;
  }

  void count(int64_t nodes) {
    created_ += nodes;
    if (created_ > kMaxInlinedNodes)
      sdk::fail(LOOM_ERROR_INVALID_MODEL,
                "inlining the model-local functions would create more than " +
                    std::to_string(kMaxInlinedNodes) + " nodes");
  }

  // Replaces calls in `g` (and in the subgraphs of its nodes).
  // `graph_depth` counts nested graphs as the loader will see them after inlining; bounding it
  // here too keeps the recursion (and the stack) as shallow as the loader's.
  void inline_graph(::onnx::GraphProto& g, int call_depth, int graph_depth) {
    if (graph_depth > kMaxGraphDepth)
      sdk::fail(LOOM_ERROR_INVALID_MODEL, "graph " + quote_name(g.name()) +
                                              ": graph attributes are nested more than " +
                                              std::to_string(kMaxGraphDepth) + " levels deep");
    google::protobuf::RepeatedPtrField<::onnx::NodeProto> out;
    for (::onnx::NodeProto& node : *g.mutable_node())
      emit(std::move(node), out, call_depth, graph_depth);
    g.mutable_node()->Swap(&out);
  }

  void emit(::onnx::NodeProto node, google::protobuf::RepeatedPtrField<::onnx::NodeProto>& out,
            int call_depth, int graph_depth) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) inline_graph(*a.mutable_g(), call_depth, graph_depth + 1);
      for (auto& sub : *a.mutable_graphs()) inline_graph(sub, call_depth, graph_depth + 1);
    }
    if (const Function* fn = callee(node))
      expand(node, *fn, out, call_depth + 1, graph_depth);
    else
      *out.Add() = std::move(node);
  }

  void merge_opsets(const ::onnx::FunctionProto& f, const std::string& fname) {
    for (const auto& op : f.opset_import()) {
      std::string domain = normalize_domain(op.domain());
      auto [it, added] = opsets_.emplace(domain, op.version());
      if (added) {
        auto* imp = model_.add_opset_import();
        imp->set_domain(domain);
        imp->set_version(op.version());
      } else if (it->second != op.version()) {
        sdk::fail(LOOM_ERROR_UNSUPPORTED,
                  "model-local function " + quote_name(fname) + " imports opset " +
                      quote_name(domain.empty() ? "ai.onnx" : domain) + " version " +
                      std::to_string(op.version()) + " but the model imports version " +
                      std::to_string(it->second) +
                      "; Loom cannot mix versions of one domain in one graph");
      }
    }
  }

  // The call's attribute named `ref`, else the function's default, else nothing.
  const ::onnx::AttributeProto* resolve_ref(const std::string& ref, const ::onnx::NodeProto& call,
                                            const Function& fn) const {
    for (const auto& a : call.attribute())
      if (a.name() == ref) return &a;
    auto it = fn.defaults.find(ref);
    return it == fn.defaults.end() ? nullptr : &it->second;
  }

  // Rewrites names and attribute references of a node copied from a function body (and, with
  // `locals`, of the nodes of its subgraphs, whose own names are left alone).
  void rewrite(::onnx::NodeProto& node, const std::map<std::string, std::string>& rename,
               const std::set<std::string>& locals, const ::onnx::NodeProto& call,
               const Function& fn) {
    auto map_name = [&](std::string* s) {
      if (s->empty() || locals.count(*s)) return;
      if (auto it = rename.find(*s); it != rename.end()) *s = it->second;
    };
    for (std::string& s : *node.mutable_input()) map_name(&s);
    for (std::string& s : *node.mutable_output()) map_name(&s);
    google::protobuf::RepeatedPtrField<::onnx::AttributeProto> attrs;
    for (::onnx::AttributeProto& a : *node.mutable_attribute()) {
      if (!a.ref_attr_name().empty()) {
        const ::onnx::AttributeProto* value = resolve_ref(a.ref_attr_name(), call, fn);
        if (!value) continue;  // not given and no default: the op's own default applies
        std::string name = a.name();
        a = *value;
        a.set_name(name);
      }
      if (a.has_g()) rewrite_subgraph(*a.mutable_g(), rename, locals, call, fn);
      for (auto& sub : *a.mutable_graphs()) rewrite_subgraph(sub, rename, locals, call, fn);
      *attrs.Add() = std::move(a);
    }
    node.mutable_attribute()->Swap(&attrs);
  }

  void rewrite_subgraph(::onnx::GraphProto& g, const std::map<std::string, std::string>& rename,
                        std::set<std::string> locals, const ::onnx::NodeProto& call,
                        const Function& fn) {
    for (const auto& v : g.input()) locals.insert(v.name());
    for (const auto& t : g.initializer()) locals.insert(t.name());
    for (const auto& n : g.node())
      for (const auto& o : n.output()) locals.insert(o);
    for (auto& n : *g.mutable_node()) rewrite(n, rename, locals, call, fn);
    // A subgraph output may name an outer value directly.
    for (auto& v : *g.mutable_output())
      if (!locals.count(v.name()))
        if (auto it = rename.find(v.name()); it != rename.end()) v.set_name(it->second);
  }

  void expand(const ::onnx::NodeProto& call, const Function& fn,
              google::protobuf::RepeatedPtrField<::onnx::NodeProto>& out, int call_depth,
              int graph_depth) {
    const ::onnx::FunctionProto& f = *fn.proto;
    const std::string fname = display({normalize_domain(f.domain()), f.name(), ""});
    const std::string where = (call.name().empty() ? "a call" : "node " + quote_name(call.name())) +
                              " of function " + quote_name(fname);
    if (call_depth > kMaxFunctionCallDepth)
      sdk::fail(LOOM_ERROR_INVALID_MODEL, where + ": model-local function calls nest more than " +
                                              std::to_string(kMaxFunctionCallDepth) +
                                              " levels deep (recursive functions are not allowed)");
    if (call.input_size() > f.input_size() || call.output_size() > f.output_size())
      sdk::fail(LOOM_ERROR_INVALID_MODEL,
                where + " passes " + std::to_string(call.input_size()) + " inputs and " +
                    std::to_string(call.output_size()) + " outputs; the function declares " +
                    std::to_string(f.input_size()) + " and " + std::to_string(f.output_size()));
    merge_opsets(f, fname);

    const std::string prefix = fresh((call.name().empty() ? f.name() : call.name()) + "/");
    std::map<std::string, std::string> rename;
    for (int i = 0; i < f.input_size(); ++i)
      rename[f.input(i)] = i < call.input_size() ? call.input(i) : "";
    for (int i = 0; i < f.output_size(); ++i)
      rename[f.output(i)] = i < call.output_size() && !call.output(i).empty()
                                ? call.output(i)
                                : fresh(prefix + f.output(i));
    for (const auto& n : f.node())
      for (const auto& o : n.output())
        if (!o.empty() && !rename.count(o)) rename[o] = fresh(prefix + o);

    count(fn.nodes);
    for (const auto& body_node : f.node()) {
      ::onnx::NodeProto n = body_node;
      if (!n.name().empty()) n.set_name(prefix + n.name());
      rewrite(n, rename, {}, call, fn);
      emit(std::move(n), out, call_depth, graph_depth);
    }
  }

  ::onnx::ModelProto& model_;
  std::map<std::string, int64_t> opsets_;
  std::map<Key, Function> functions_;
  std::set<std::string> used_;
  std::map<std::string, int> next_suffix_;
  int64_t created_ = 0;
};

}  // namespace

void inline_local_functions(::onnx::ModelProto& model) {
  if (model.functions_size() == 0) return;
  Inliner(model).run();
}

}  // namespace loom::onnx

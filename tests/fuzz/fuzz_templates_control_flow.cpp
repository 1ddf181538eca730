// The run-time fuzzer's control-flow templates (fuzz_model.hpp): Loop, a Loop that builds a
// sequence, Scan and If, each with a body graph decoded from the bytes.
#include <string>
#include <vector>

#include "fuzz_model.hpp"

namespace loom_fuzz {

// Loop: trip count and condition from the data; the body doubles, concatenates or adds to the
// carried value and may emit a scan output each iteration.
Outputs t_loop(Case& c, FDP& f) {
  loom_dtype_t t = coin(f, 4) ? LOOM_DTYPE_INT64 : LOOM_DTYPE_FLOAT32;
  Dims d = small_dims(f, 0, 3);
  std::string m = coin(f, 5) ? "" : scalar_i64(c, f, "M", coin(f, 8));
  std::string cond = coin(f, 3) ? "" : tensor(c, f, "cond", LOOM_DTYPE_BOOL, {}, Fill::kIndex);
  std::string v = data(c, f, t, d);
  bool scan = coin(f);
  Outputs o = {"v_final"};
  if (scan) o.push_back("scan");
  auto* n = node(c, "Loop", {m, cond, v}, o);
  auto* b = attr_graph(n, "body");
  Dims none;
  body_io(b->add_input(), "iter", LOOM_DTYPE_INT64, &none);
  body_io(b->add_input(), "cond_in", LOOM_DTYPE_BOOL, &none);
  body_io(b->add_input(), "v_in", t, nullptr);
  // The condition: the incoming one, or iter < a limit from the data (an outer-scope value).
  switch (f.ConsumeIntegralInRange<int>(0, 2)) {
    case 0:
      node(c, "Identity", {"cond_in"}, {"cond_out"}, b);
      break;
    case 1: {
      std::string limit = scalar_i64(c, f, "limit");
      node(c, "Less", {"iter", limit}, {"cond_out"}, b);
      break;
    }
    default: {
      // A condition that ignores the trip count: only the loop limit ends it without M.
      auto* k = node(c, "Constant", {}, {"cond_out"}, b);
      auto* a = k->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      a->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
      a->mutable_t()->add_int32_data(1);
      break;
    }
  }
  switch (f.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      node(c, "Add", {"v_in", "v_in"}, {"v_out"}, b);
      break;
    case 1: {
      auto* cc = node(c, "Concat", {"v_in", "v_in"}, {"v_out"}, b);
      attr_i(cc, "axis", attr_int(f, -3, 2));
      break;
    }
    case 2:
      node(c, "Identity", {"v_in"}, {"v_out"}, b);
      break;
    default: {
      // Expand the carried value to a shape from the data (outer scope).
      std::string s = shape_tensor(c, f, "shape", shape_len(f, 3));
      node(c, "Expand", {"v_in", s}, {"v_out"}, b);
      break;
    }
  }
  body_io(b->add_output(), "cond_out", LOOM_DTYPE_BOOL, &none);
  body_io(b->add_output(), "v_out", t, nullptr);
  if (scan) {
    node(c, coin(f) ? "Identity" : "Neg", {"v_in"}, {"s_out"}, b);
    body_io(b->add_output(), "s_out", t, nullptr);
  }
  return o;
}

// Loop carrying a sequence (SequenceEmpty -> SequenceInsert per iteration ->
// ConcatFromSequence): the core runs such control flow itself, on the host, whatever the
// devices are.
Outputs t_sequence_loop(Case& c, FDP& f) {
  std::string m = scalar_i64(c, f, "M");
  std::string x = data(c, f, LOOM_DTYPE_FLOAT32, small_dims(f, 0, 3));
  auto* e = node(c, "SequenceEmpty", {}, {"seq0"});
  attr_i(e, "dtype", 1);
  auto* n = node(c, "Loop", {m, "", "seq0"}, {"seq"});
  auto* b = attr_graph(n, "body");
  Dims none;
  body_io(b->add_input(), "iter", LOOM_DTYPE_INT64, &none);
  body_io(b->add_input(), "cond_in", LOOM_DTYPE_BOOL, &none);
  auto* sin = b->add_input();
  sin->set_name("s_in");
  sin->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(1);
  node(c, "Identity", {"cond_in"}, {"cond_out"}, b);
  if (coin(f)) {
    node(c, "SequenceInsert", {"s_in", x}, {"s_out"}, b);
  } else {
    // Insert at a position from the data.
    std::string pos = scalar_i64(c, f, "pos");
    node(c, "SequenceInsert", {"s_in", x, pos}, {"s_out"}, b);
  }
  body_io(b->add_output(), "cond_out", LOOM_DTYPE_BOOL, &none);
  auto* sout = b->add_output();
  sout->set_name("s_out");
  sout->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(1);
  auto* cat = node(c, "ConcatFromSequence", {"seq"}, {"y"});
  attr_i(cat, "axis", attr_int(f, -3, 2));
  if (coin(f, 3)) attr_i(cat, "new_axis", attr_int(f, 0, 1));
  return {"y"};
}

Outputs t_scan(Case& c, FDP& f) {
  Dims sd = small_dims(f, 0, 2);
  Dims xd = small_dims(f, 1, 3);
  std::string s0 = data(c, f, LOOM_DTYPE_FLOAT32, sd);
  std::string x = data(c, f, LOOM_DTYPE_FLOAT32, xd);
  auto* n = node(c, "Scan", {s0, x}, {"s_final", "ys"});
  attr_i(n, "num_scan_inputs", coin(f, 8) ? attr_int(f, 0, 3) : 1);
  if (coin(f, 3)) attr_ints(n, "scan_input_axes", attr_ints_of(f, fuzzy_len(f, 1), -3, 2));
  if (coin(f, 3)) attr_ints(n, "scan_output_axes", attr_ints_of(f, fuzzy_len(f, 1), -3, 2));
  if (coin(f, 3)) attr_ints(n, "scan_input_directions", attr_ints_of(f, fuzzy_len(f, 1), 0, 1));
  if (coin(f, 3)) attr_ints(n, "scan_output_directions", attr_ints_of(f, fuzzy_len(f, 1), 0, 1));
  auto* b = attr_graph(n, "body");
  body_io(b->add_input(), "s_in", LOOM_DTYPE_FLOAT32, nullptr);
  body_io(b->add_input(), "x_in", LOOM_DTYPE_FLOAT32, nullptr);
  switch (f.ConsumeIntegralInRange<int>(0, 2)) {
    case 0:
      node(c, "Add", {"s_in", "x_in"}, {"s_out"}, b);
      break;
    case 1:
      node(c, "Identity", {"s_in"}, {"s_out"}, b);
      break;
    default: {
      auto* cc = node(c, "Concat", {"s_in", "s_in"}, {"s_out"}, b);
      attr_i(cc, "axis", 0);
      break;
    }
  }
  node(c, coin(f) ? "Identity" : "Abs", {"x_in"}, {"y_out"}, b);
  body_io(b->add_output(), "s_out", LOOM_DTYPE_FLOAT32, nullptr);
  body_io(b->add_output(), "y_out", LOOM_DTYPE_FLOAT32, nullptr);
  return {"s_final", "ys"};
}

// If: the branches give tensors of different shapes (one from the data).
Outputs t_if(Case& c, FDP& f) {
  std::string cond =
      tensor(c, f, "cond", LOOM_DTYPE_BOOL, coin(f, 8) ? Dims{1} : Dims{}, Fill::kIndex);
  std::string x = data(c, f, LOOM_DTYPE_FLOAT32, small_dims(f, 0, 3));
  std::string s = shape_tensor(c, f, "shape", shape_len(f, 3));
  auto* n = node(c, "If", {cond}, {"y"});
  const char* branches[] = {"then_branch", "else_branch"};
  for (const char* br : branches) {
    auto* b = attr_graph(n, br);
    switch (f.ConsumeIntegralInRange<int>(0, 3)) {
      case 0:
        node(c, "Identity", {x}, {"r"}, b);
        break;
      case 1:
        node(c, "Expand", {x, s}, {"r"}, b);
        break;
      case 2:
        node(c, "Reshape", {x, s}, {"r"}, b);
        break;
      default:
        node(c, "ConstantOfShape", {s}, {"r"}, b);
        break;
    }
    body_io(b->add_output(), "r", LOOM_DTYPE_FLOAT32, nullptr);
  }
  return {"y"};
}

}  // namespace loom_fuzz

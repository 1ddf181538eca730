// ai.onnx.ml ops whose results are tensors: scalers and encoders keep the input's shape;
// regressors and classifiers give [N, targets] scores and [N] labels.
#include <string>

#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::dims_to_string;
using infer::kUnknownDim;
using infer::NodeView;

int64_t batch_of(const NodeView& v) {
  std::optional<Dims> x = v.shape(0);
  return x && !x->empty() ? (*x)[0] : kUnknownDim;
}

// Scaler, Normalizer: float32 of the input's shape. Binarizer, Imputer: same type and shape.
void float_same_shape(NodeView& v) {
  v.set_output(0, LOOM_DTYPE_FLOAT32, v.shape(0));
}

// LabelEncoder: shape of the input, type of the values attribute that is set.
void label_encoder(NodeView& v) {
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  if (v.attrs().has("values_int64s") || v.attrs().has("default_int64")) dtype = LOOM_DTYPE_INT64;
  if (v.attrs().has("values_floats") || v.attrs().has("default_float")) dtype = LOOM_DTYPE_FLOAT32;
  if (v.attrs().has("values_strings") || v.attrs().has("default_string")) dtype = LOOM_DTYPE_STRING;
  // LabelEncoder-1 (classes_strings) maps between strings and int64 in the direction opposite
  // to its input, whichever default it sets.
  if (v.attrs().has("classes_strings"))
    dtype = v.dtype(0) == LOOM_DTYPE_STRING ? LOOM_DTYPE_INT64 : LOOM_DTYPE_STRING;
  v.set_output(0, dtype, v.shape(0));
}

// CategoryMapper: strings <-> int64, shape kept.
void category_mapper(NodeView& v) {
  v.set_output(0, v.dtype(0) == LOOM_DTYPE_STRING ? LOOM_DTYPE_INT64 : LOOM_DTYPE_STRING,
               v.shape(0));
}

// LinearRegressor, SVMRegressor, TreeEnsembleRegressor: float32 [N, targets].
void regressor(NodeView& v) {
  int64_t targets = v.attrs().get_int("targets", v.attrs().get_int("n_targets", 1));
  v.set_output(0, LOOM_DTYPE_FLOAT32, Dims{batch_of(v), targets});
}

// Classifiers: label [N] (int64 or string by which class labels are set), scores [N, classes].
void classifier(NodeView& v) {
  int64_t classes = kUnknownDim;
  loom_dtype_t label = LOOM_DTYPE_UNDEFINED;
  if (auto ints = v.attrs().get_ints("classlabels_ints")) {
    label = LOOM_DTYPE_INT64, classes = static_cast<int64_t>(ints->size());
  } else if (auto ints64 = v.attrs().get_ints("classlabels_int64s")) {
    label = LOOM_DTYPE_INT64, classes = static_cast<int64_t>(ints64->size());
  } else if (auto strings = v.attrs().get_strings("classlabels_strings")) {
    label = LOOM_DTYPE_STRING, classes = static_cast<int64_t>(strings->size());
  }
  int64_t n = batch_of(v);
  v.set_output(0, label, Dims{n});
  // A binary classifier with one label column may still score two classes; keep it unknown.
  v.set_output(1, LOOM_DTYPE_FLOAT32, Dims{n, classes > 2 ? classes : kUnknownDim});
}

// ArrayFeatureExtractor(X, Y): X's leading dims, last one the number of selected indices.
void array_feature_extractor(NodeView& v) {
  std::optional<Dims> x = v.shape(0), y = v.shape(1);
  if (!x) return v.set_output_dtype(0, v.dtype(0));
  if (x->empty()) v.fail("X " + dims_to_string(*x) + " must have rank >= 1");
  Dims out = *x;
  out.back() = y ? infer::element_count(v, *y) : kUnknownDim;
  if (out.size() == 1) out.insert(out.begin(), 1);
  v.set_output(0, v.dtype(0), out);
}

// FeatureVectorizer(X...): float32 [N, sum of inputdimensions].
void feature_vectorizer(NodeView& v) {
  int64_t width = 0;
  if (auto dims = v.attrs().get_ints("inputdimensions"))
    for (int64_t d : *dims) width = d < 0 || width < 0 ? kUnknownDim : width + d;
  else
    width = kUnknownDim;
  v.set_output(0, LOOM_DTYPE_FLOAT32, Dims{batch_of(v), width});
}

// OneHotEncoder(X): float32, X's shape plus one dimension of the category count.
void one_hot_encoder(NodeView& v) {
  std::optional<Dims> x = v.shape(0);
  int64_t categories = kUnknownDim;
  if (auto ints = v.attrs().get_ints("cats_int64s"))
    categories = static_cast<int64_t>(ints->size());
  if (auto strings = v.attrs().get_strings("cats_strings"))
    categories = static_cast<int64_t>(strings->size());
  if (x) x->push_back(categories);
  v.set_output(0, LOOM_DTYPE_FLOAT32, x);
}

const InferEntry kEntries[] = {
    {"ai.onnx.ml", "FeatureVectorizer", adapt<feature_vectorizer>},
    {"ai.onnx.ml", "OneHotEncoder", adapt<one_hot_encoder>},
    {"ai.onnx.ml", "Scaler", adapt<float_same_shape>},
    {"ai.onnx.ml", "Normalizer", adapt<float_same_shape>},
    {"ai.onnx.ml", "Binarizer", adapt<infer::same_as_input>},
    {"ai.onnx.ml", "Imputer", adapt<infer::same_as_input>},
    {"ai.onnx.ml", "LabelEncoder", adapt<label_encoder>},
    {"ai.onnx.ml", "CategoryMapper", adapt<category_mapper>},
    {"ai.onnx.ml", "LinearRegressor", adapt<regressor>},
    {"ai.onnx.ml", "SVMRegressor", adapt<regressor>},
    {"ai.onnx.ml", "TreeEnsembleRegressor", adapt<regressor>},
    {"ai.onnx.ml", "LinearClassifier", adapt<classifier>},
    {"ai.onnx.ml", "SVMClassifier", adapt<classifier>},
    {"ai.onnx.ml", "TreeEnsembleClassifier", adapt<classifier>},
    {"ai.onnx.ml", "ArrayFeatureExtractor", adapt<array_feature_extractor>},
};

}  // namespace

std::span<const InferEntry> ml_infer_entries() {
  return kEntries;
}

}  // namespace loom::core

// BatchNorm -> BatchNormalization; Scale -> Mul (+ Add). Both act per channel, which for ncnn
// is the outermost batch-free dimension (Loom axis 1) whatever the blob's rank.
#include "conversion.hpp"

namespace loom::ncnnfmt {
namespace {

// Dims that put `count` values on axis 1 of a blob of ncnn rank `rank`: [count, 1, ...].
std::vector<int64_t> channel_dims(int64_t count, int rank) {
  std::vector<int64_t> dims = {count};
  for (int i = 1; i < rank; ++i) dims.push_back(1);
  return dims;
}

void check_channels(Context& ctx, const Layer& layer, int64_t channels) {
  const Shape& in = ctx.shape(layer.bottoms[0]);
  if (in.size() > 1 && in[1] >= 0 && in[1] != channels)
    layer_error(layer, "has " + std::to_string(channels) +
                           " channels of parameters but the input has " + std::to_string(in[1]));
}

}  // namespace

void convert_batch_norm(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  int64_t channels = layer.params.get_int(0, 0);
  float eps = layer.params.get_float(1, 0.f);
  if (channels <= 0) layer_error(layer, "channels (param 0) must be positive");
  check_channels(ctx, layer, channels);
  // ncnn's order in the .bin: slope, mean, variance, bias.
  std::vector<std::string> names;
  for (const char* part : {"slope", "mean", "var", "bias"})
    names.push_back(ctx.constant(
        layer.name + "/" + part, {channels},
        ctx.weights().read(channels, BlobStorage::kRawFloat, layer.name + " " + part)));
  auto* n = ctx.node("BatchNormalization", layer.name,
                     {layer.bottoms[0], names[0], names[3], names[1], names[2]}, layer.tops);
  ctx.attr(n, "epsilon", eps);
  ctx.set_shape(layer.tops[0], ctx.shape(layer.bottoms[0]));
}

void convert_scale(Context& ctx, const Layer& layer) {
  expect_io(layer, 1, 1);
  int64_t size = layer.params.get_int(0, 0);
  bool bias = layer.params.get_int(1, 0) != 0;
  if (size == kNotGiven)
    layer_unsupported(layer,
                      "a scale taken from a second input (scale_data_size -233) is not supported");
  if (size <= 0) layer_error(layer, "scale_data_size (param 0) must be positive");
  check_channels(ctx, layer, size);
  int rank = ctx.rank(layer.bottoms[0], layer.name);
  std::vector<int64_t> dims = channel_dims(size, rank);
  std::string scale =
      ctx.constant(layer.name + "/scale", dims,
                   ctx.weights().read(size, BlobStorage::kRawFloat, layer.name + " scale"));
  if (!bias) {
    ctx.node("Mul", layer.name, {layer.bottoms[0], scale}, layer.tops);
  } else {
    std::string b =
        ctx.constant(layer.name + "/bias", dims,
                     ctx.weights().read(size, BlobStorage::kRawFloat, layer.name + " bias"));
    std::string scaled = ctx.temp(layer.name + "/scaled");
    ctx.node("Mul", layer.name, {layer.bottoms[0], scale}, {scaled});
    ctx.node("Add", layer.name + "/bias", {scaled, b}, layer.tops);
  }
  ctx.set_shape(layer.tops[0], ctx.shape(layer.bottoms[0]));
}

}  // namespace loom::ncnnfmt

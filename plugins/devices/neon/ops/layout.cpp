#include "ops/layout.hpp"

#include <algorithm>

#include "kernels/pack4.hpp"

namespace loom::neon {
namespace {

class LayoutConversionOp final : public Op {
 public:
  explicit LayoutConversionOp(bool to_pack4) : to_pack4_(to_pack4) {}

  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    const Tensor& x = *in[0];
    if (x.rank() != 4)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "NC4HW4 conversion of a tensor of shape " + shape_text(x.dims) + ", not rank 4");
    if (x.packed4 == to_pack4_) {
      out[0] = x;
      return;
    }
    out[0] = to_pack4_ ? make_pack4_tensor(x.dims) : make_tensor(x.dims);
    const size_t images = static_cast<size_t>(x.dims[0]), channels = static_cast<size_t>(x.dims[1]);
    const size_t blocks = channel_blocks(channels), plane = x.plane();
    const size_t image_floats = channels * plane, packed_floats = blocks * 4 * plane;
    const size_t grain = std::max<size_t>(1, 16384 / std::max<size_t>(plane * 4, 1));
    float* y = out[0].data;
    rt.parallel_for(images * blocks, grain, [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end;) {
        const size_t img = i / blocks, b = i % blocks, stop = std::min(end - i + b, blocks);
        if (to_pack4_)
          pack4_image(x.data + img * image_floats, channels, plane, y + img * packed_floats, b,
                      stop);
        else
          unpack4_image(x.data + img * packed_floats, channels, plane, y + img * image_floats, b,
                        stop);
        i += stop - b;
      }
    });
  }

 private:
  bool to_pack4_;
};

}  // namespace

std::unique_ptr<Op> make_layout_conversion(bool to_pack4) {
  return std::make_unique<LayoutConversionOp>(to_pack4);
}

}  // namespace loom::neon

// Conv (2-D, float32, constant weights): depthwise convolutions (one filter per channel) run the
// direct NEON kernels; 3x3 stride-1 convolutions with at least 4 channels per group run Winograd
// F(2x2, 3x3) (ops/conv_winograd.hpp); every other convolution is one packed GEMM per image and
// group with the weights packed at compile time: a 1x1 convolution with unit strides and no
// padding reads the input planes directly as the GEMM operand, the others go through im2col
// first. In packed (NC4HW4) chains, depthwise convolutions run kernels/depthwise_pack4 (in fp16
// with precision=f16 where the CPU has it) and dense 3x3 stride-2 convolutions with few input
// channels run kernels/conv3x3s2_pack4 without im2col.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/conv3x3s2_pack4.hpp"
#include "kernels/depthwise.hpp"
#include "kernels/depthwise_pack4.hpp"
#include "kernels/depthwise_pack4_fp16.hpp"
#include "kernels/im2col.hpp"
#include "kernels/pack4.hpp"
#include "ops/conv_winograd.hpp"
#include "ops/gemm_driver.hpp"
#include "ops/layout.hpp"
#include "ops/window_attrs.hpp"

namespace loom::neon {
namespace {

std::string conv_supports(const loom_graph_t& graph, const loom_node_t& node) {
  if (std::string r = require_float32(graph, node); !r.empty()) return r;
  if (input_rank(graph, node, 0) != 4) return "only 2-D convolutions (NCHW input of rank 4)";
  const loom_value_info_t* w = constant_input(graph, node, 1);
  if (!w || w->rank != 4) return "the weights must be a constant of rank 4";
  if (node.num_inputs > 2 && node.inputs[2] >= 0) {
    const loom_value_info_t* b = constant_input(graph, node, 2);
    if (!b || b->rank != 1 || b->dims[0] != w->dims[0])
      return "the bias must be a constant vector of one value per output channel";
  }
  Attributes attrs(node);
  const int64_t group = attrs.get_int("group", 1);
  if (group < 1 || w->dims[0] % group != 0) return "group must divide the output channels";
  if (auto k = attrs.get_ints("kernel_shape"))
    if (k->size() != 2 || (*k)[0] != w->dims[2] || (*k)[1] != w->dims[3])
      return "kernel_shape does not match the weights";
  for (int d = 0; d < 4; ++d)
    if (w->dims[d] <= 0) return "the weights have an empty dimension";
  return check_window_attrs(node, /*allow_dilations=*/true);
}

class ConvOp final : public Op {
 public:
  ConvOp(const loom_graph_t& graph, const loom_node_t& node, const CompileOptions& options) {
    const loom_value_info_t* w = constant_input(graph, node, 1);
    cout_ = w->dims[0];
    cin_per_group_ = w->dims[1];
    group_ = Attributes(node).get_int("group", 1);
    attrs_ = read_window_attrs(node, w->dims[2], w->dims[3]);
    cout_per_group_ = cout_ / group_;
    const auto* weights = static_cast<const float*>(w->data);
    if (node.num_inputs > 2 && node.inputs[2] >= 0) {
      const auto* b = static_cast<const float*>(constant_input(graph, node, 2)->data);
      bias_.assign(b, b + cout_);
    }
    const size_t taps = static_cast<size_t>(w->dims[2] * w->dims[3]);
    depthwise_ = cin_per_group_ == 1 && cout_per_group_ == 1;
    if (depthwise_) {
      weights_.assign(weights, weights + static_cast<size_t>(cout_) * taps);
      // NC4HW4 filters: per block, per tap, the 4 channels' weights side by side (zero for
      // padding channels), and the bias padded the same way.
      const size_t blocks = channel_blocks(static_cast<size_t>(cout_));
      weights4_.assign(blocks * taps * 4, 0.0f);
      bias4_.assign(blocks * 4, 0.0f);
      for (size_t ch = 0; ch < static_cast<size_t>(cout_); ++ch) {
        for (size_t t = 0; t < taps; ++t)
          weights4_[((ch / 4) * taps + t) * 4 + ch % 4] = weights[ch * taps + t];
        if (!bias_.empty()) bias4_[ch] = bias_[ch];
      }
      // precision=f16 (the CPU has FP16 arithmetic): the packed kernel computes in fp16 with
      // the filters converted once here. The NCHW kernels (isolated convs) stay f32.
      if (options.fp16) {
        weights4_f16_.resize(blocks * taps * 8);
        pack_depthwise_pack4_weights_f16(weights4_.data(), blocks * taps, weights4_f16_.data());
      }
      return;
    }
    // The GEMM paths read NCHW: packed inputs are converted around them (see run_pack4).
    to_nchw_ = make_layout_conversion(false);
    to_pack4_ = make_layout_conversion(true);
    if (direct3x3s2_applies()) {
      // Packed chains run the direct kernel; the GEMM weights below serve NCHW inputs.
      direct3x3s2_.resize(conv3x3s2_pack4_weight_floats(static_cast<size_t>(cout_),
                                                        static_cast<size_t>(cin_per_group_)));
      pack_conv3x3s2_pack4_weights(weights, static_cast<size_t>(cout_),
                                   static_cast<size_t>(cin_per_group_), direct3x3s2_.data());
      bias4_.assign(channel_blocks(static_cast<size_t>(cout_)) * 4, 0.0f);
      std::copy(bias_.begin(), bias_.end(), bias4_.begin());
    }
    if (WinogradConv::applies(attrs_, cin_per_group_, cout_per_group_)) {
      winograd_ =
          std::make_unique<WinogradConv>(weights, cout_, cin_per_group_, group_, options.fp16);
      return;
    }
    // One packed A (Cout/group x Cin/group*kh*kw) per group, back to back, in the precision
    // the GEMM will run in.
    const size_t m = static_cast<size_t>(cout_per_group_);
    k_ = static_cast<size_t>(cin_per_group_) * taps;
    group_stride_ = packed_a_floats(m, k_);
    packed_.half = options.fp16;
    if (packed_.half)
      packed_.f16.resize(group_stride_ * static_cast<size_t>(group_));
    else
      packed_.f32.resize(group_stride_ * static_cast<size_t>(group_));
    for (int64_t g = 0; g < group_; ++g) {
      const float* src = weights + static_cast<size_t>(g) * m * k_;
      const size_t offset = static_cast<size_t>(g) * group_stride_;
      if (packed_.half)
        pack_a_as<uint16_t>(src, k_, 1, m, k_, packed_.f16.data() + offset, 0,
                            gemm_panels(m, kGemmMR));
      else
        pack_a_as<float>(src, k_, 1, m, k_, packed_.f32.data() + offset, 0,
                         gemm_panels(m, kGemmMR));
    }
  }

  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    const Tensor& x = *in[0];
    if (x.rank() != 4)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "input of shape " + shape_text(x.dims) + " is not NCHW");
    const int64_t n = x.dims[0], c = x.dims[1];
    if (c != cin_per_group_ * group_)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "input has " + std::to_string(c) +
                                            " channels, the weights expect " +
                                            std::to_string(cin_per_group_ * group_));
    const Window2d g = make_window(attrs_, x.dims[2], x.dims[3]);
    if (x.packed4) {
      run_pack4(x, g, out[0], rt);
      return;
    }
    out[0] = make_tensor({n, cout_, g.oh, g.ow});
    const size_t in_plane = static_cast<size_t>(g.ih * g.iw);
    const size_t out_plane = static_cast<size_t>(g.oh * g.ow);
    const float* bias = bias_.empty() ? nullptr : bias_.data();
    float* y = out[0].data;
    if (depthwise_) {
      const size_t taps = static_cast<size_t>(g.kh * g.kw);
      rt.parallel_for(static_cast<size_t>(n * cout_), 1, [&](size_t begin, size_t end) {
        for (size_t p = begin; p < end; ++p) {
          const size_t ch = p % static_cast<size_t>(cout_);
          depthwise_plane(x.data + p * in_plane, weights_.data() + ch * taps,
                          bias ? bias[ch] : 0.0f, y + p * out_plane, g);
        }
      });
      return;
    }
    if (winograd_) {
      winograd_->run(x.data, n, g, bias, y, rt);
      return;
    }
    const bool direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 &&
                        g.pl == 0 && g.pb == 0 && g.pr == 0;
    std::unique_ptr<float[]> col;
    if (!direct) col = scratch_floats(k_ * out_plane);
    const size_t m = static_cast<size_t>(cout_per_group_);
    for (int64_t img = 0; img < n; ++img) {
      for (int64_t grp = 0; grp < group_; ++grp) {
        const float* src = x.data + static_cast<size_t>(img * c + grp * cin_per_group_) * in_plane;
        const float* b = src;
        if (!direct) {
          rt.parallel_for(
              k_, 4, [&](size_t begin, size_t end) { im2col_rows(src, g, col.get(), begin, end); });
          b = col.get();
        }
        const size_t offset = static_cast<size_t>(grp) * group_stride_;
        const float* group_bias = bias ? bias + grp * cout_per_group_ : nullptr;
        float* dst = y + static_cast<size_t>(img * cout_ + grp * cout_per_group_) * out_plane;
        if (packed_.half)
          gemm_with_packed_a<uint16_t>(rt, m, out_plane, k_, packed_.f16.data() + offset, b,
                                       out_plane, 1, group_bias, dst, out_plane);
        else
          gemm_with_packed_a<float>(rt, m, out_plane, k_, packed_.f32.data() + offset, b, out_plane,
                                    1, group_bias, dst, out_plane);
      }
    }
  }

  bool pack4_input(size_t i) const override { return i == 0; }

 private:
  void run_pack4(const Tensor& x, const Window2d& g, Tensor& y, const Runtime& rt) {
    const bool pointwise = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 &&
                           g.pl == 0 && g.pb == 0 && g.pr == 0;
    if (!depthwise_ && !winograd_ && pointwise && group_ == 1 && !packed_.half) {
      // 1x1: the GEMM packs its B operand straight from the NC4HW4 input and its tiles store
      // straight into the NC4HW4 output.
      y = make_pack4_tensor({x.dims[0], cout_, g.oh, g.ow});
      const size_t plane = x.plane();
      for (int64_t img = 0; img < x.dims[0]; ++img)
        gemm_with_packed_a_pack4_b(rt, static_cast<size_t>(cout_), plane, k_, packed_.f32.data(),
                                   x.data + static_cast<size_t>(img) * x.blocks() * plane * 4,
                                   bias_.empty() ? nullptr : bias_.data(),
                                   y.data + static_cast<size_t>(img) * y.blocks() * plane * 4);
      return;
    }
    if (!direct3x3s2_.empty()) {
      run_direct3x3s2(x, g, y, rt);
      return;
    }
    if (!depthwise_) {
      // The GEMM and Winograd kernels take NCHW planes: the image goes through an NCHW copy
      // and the result is packed again, so the graph around the conv still stays NC4HW4.
      std::vector<Tensor> nchw_in(1), nchw_out(1);
      const Tensor* src[] = {&x};
      to_nchw_->run(src, nchw_in, rt);
      const Tensor* conv_in[] = {&nchw_in[0]};
      run(conv_in, nchw_out, rt);
      nchw_in[0] = Tensor{};
      const Tensor* result[] = {&nchw_out[0]};
      std::span<Tensor> dst(&y, 1);
      to_pack4_->run(result, dst, rt);
      return;
    }
    y = make_pack4_tensor({x.dims[0], cout_, g.oh, g.ow});
    const size_t blocks = x.blocks(), taps = static_cast<size_t>(g.kh * g.kw);
    const size_t in_block = x.plane() * 4, out_block = y.plane() * 4;
    if (!weights4_f16_.empty()) {
      rt.parallel_for(static_cast<size_t>(x.dims[0]) * blocks, 1, [&](size_t begin, size_t end) {
        auto half_block = scratch<uint16_t>(in_block);  // the block converted to fp16
        for (size_t p = begin; p < end; ++p) {
          const size_t b = p % blocks;
          depthwise_pack4_block_f16(x.data + p * in_block, weights4_f16_.data() + b * taps * 8,
                                    bias4_.data() + b * 4, y.data + p * out_block, g,
                                    half_block.get());
        }
      });
      return;
    }
    rt.parallel_for(static_cast<size_t>(x.dims[0]) * blocks, 1, [&](size_t begin, size_t end) {
      for (size_t p = begin; p < end; ++p) {
        const size_t b = p % blocks;
        depthwise_pack4_block(x.data + p * in_block, weights4_.data() + b * taps * 4,
                              bias4_.data() + b * 4, y.data + p * out_block, g);
      }
    });
  }

  // Dense 3x3 stride-2 convolutions with few input channels (a stem conv) read the packed
  // input directly: measured under qemu, im2col + GEMM (with the NCHW conversions around it)
  // costs more than the direct kernel below kDirect3x3s2MaxCin input channels
  // (docs/neon-device.md).
  static constexpr int64_t kDirect3x3s2MaxCin = 16;
  bool direct3x3s2_applies() const {
    const WindowAttrs& a = attrs_;
    return group_ == 1 && cin_per_group_ <= kDirect3x3s2MaxCin && a.kernel[0] == 3 &&
           a.kernel[1] == 3 && a.strides[0] == 2 && a.strides[1] == 2 && a.dilations[0] == 1 &&
           a.dilations[1] == 1;
  }

  void run_direct3x3s2(const Tensor& x, const Window2d& g, Tensor& y, const Runtime& rt) {
    y = make_pack4_tensor({x.dims[0], cout_, g.oh, g.ow});
    const size_t out_blocks = y.blocks(), rows = static_cast<size_t>(g.oh);
    const size_t in_image = x.blocks() * x.plane() * 4, out_block = y.plane() * 4;
    const size_t block_weights = direct3x3s2_.size() / out_blocks;
    // One task per output row of one output block of one image.
    rt.parallel_for(
        static_cast<size_t>(x.dims[0]) * out_blocks * rows, 1, [&](size_t begin, size_t end) {
          for (size_t t = begin; t < end; ++t) {
            const size_t oy = t % rows, ob = (t / rows) % out_blocks, img = t / rows / out_blocks;
            conv3x3s2_pack4_row(x.data + img * in_image, static_cast<size_t>(cin_per_group_),
                                direct3x3s2_.data() + ob * block_weights, bias4_.data() + ob * 4,
                                y.data + (img * out_blocks + ob) * out_block + oy * g.ow * 4, g,
                                static_cast<int64_t>(oy));
          }
        });
  }

  int64_t cout_ = 0, cin_per_group_ = 0, cout_per_group_ = 0, group_ = 1;
  WindowAttrs attrs_;
  bool depthwise_ = false;
  size_t k_ = 0, group_stride_ = 0;
  std::vector<float> weights_;              // depthwise: the filters
  std::vector<float> weights4_, bias4_;     // depthwise, NC4HW4: interleaved by blocks of 4
  std::vector<float> direct3x3s2_;          // dense 3x3 stride 2, NC4HW4 (bias in bias4_)
  std::vector<uint16_t> weights4_f16_;      // the same in fp16, each tap twice (precision=f16)
  std::unique_ptr<Op> to_nchw_, to_pack4_;  // GEMM paths: conversions around the NCHW kernels
  std::unique_ptr<WinogradConv> winograd_;  // 3x3 stride 1: transformed weights
  PackedWeights packed_;                    // otherwise: packed A per group
  std::vector<float> bias_;
};

std::unique_ptr<Op> conv_create(const loom_graph_t& graph, const loom_node_t& node,
                                const CompileOptions& options) {
  return std::make_unique<ConvOp>(graph, node, options);
}

}  // namespace

LOOM_NEON_OP("Conv", 1, conv_supports, conv_create);

}  // namespace loom::neon

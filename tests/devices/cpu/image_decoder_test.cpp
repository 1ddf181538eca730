// ImageDecoder on the cpu device: the formats decoded here (BMP, PNM) against hand-made files,
// the library formats (PNG, JPEG) against images encoded in the test with the same libraries,
// the three pixel formats, and hostile files: truncated streams, a header claiming more pixels
// than the run's tensor limit, bytes in no known format, bad attributes.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "testing/kernel_harness.hpp"

#if defined(LOOM_HAVE_JPEG)
#include <jpeglib.h>

#include <cstdio>
#endif
#if defined(LOOM_HAVE_PNG)
#include <png.h>
#endif

namespace loom::cpu {
namespace {

using testing::KernelHarness;
using testing::make_filled;
using testing::values_of;

struct Decoded {
  std::vector<int64_t> dims;
  std::vector<uint8_t> pixels;
};

Decoded decode(const std::vector<uint8_t>& file, const std::string& pixel_format = "RGB") {
  KernelHarness h("ImageDecoder", 20);
  h.input(make_filled<uint8_t>({static_cast<int64_t>(file.size())}, file));
  h.attr_string("pixel_format", pixel_format);
  auto out = h.run(1);
  return {std::vector<int64_t>(out[0].view.dims, out[0].view.dims + out[0].view.rank),
          values_of<uint8_t>(out[0])};
}

// The error of decoding `file`, or "" when it decodes.
std::string decode_error(const std::vector<uint8_t>& file, const std::string& pixel_format = "RGB",
                         loom_status_code_t* code = nullptr) {
  try {
    decode(file, pixel_format);
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

void put32(std::vector<uint8_t>& v, size_t at, uint32_t x) {
  for (int i = 0; i < 4; ++i) v[at + i] = static_cast<uint8_t>(x >> (8 * i));
}

// A 24-bit bottom-up BMP of `rgb` (width x height, rows top first).
std::vector<uint8_t> bmp24(int width, int height, const std::vector<uint8_t>& rgb) {
  const int stride = (width * 3 + 3) / 4 * 4;
  std::vector<uint8_t> f(54 + static_cast<size_t>(stride) * height, 0);
  f[0] = 'B', f[1] = 'M';
  put32(f, 2, static_cast<uint32_t>(f.size()));
  put32(f, 10, 54);
  put32(f, 14, 40);
  put32(f, 18, static_cast<uint32_t>(width));
  put32(f, 22, static_cast<uint32_t>(height));
  f[26] = 1, f[28] = 24;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c)  // stored B, G, R, last row first
        f[54 + (height - 1 - y) * stride + x * 3 + c] = rgb[(y * width + x) * 3 + 2 - c];
  return f;
}

const std::vector<uint8_t> kRgb2x3 = {255, 0,  0,  0,   255, 0,  0,   0,   255,  // top row
                                      10,  20, 30, 200, 100, 50, 255, 255, 255};

TEST(ImageDecoder, BmpInEveryPixelFormat) {
  const auto file = bmp24(3, 2, kRgb2x3);
  Decoded rgb = decode(file);
  EXPECT_EQ(rgb.dims, (std::vector<int64_t>{2, 3, 3}));
  EXPECT_EQ(rgb.pixels, kRgb2x3);
  Decoded bgr = decode(file, "BGR");
  for (size_t i = 0; i < 6; ++i)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(bgr.pixels[i * 3 + c], kRgb2x3[i * 3 + 2 - c]);
  Decoded gray = decode(file, "Grayscale");
  EXPECT_EQ(gray.dims, (std::vector<int64_t>{2, 3, 1}));
  // ITU-R 601-2 luma with Pillow's rounding: red 76, green 150, blue 29, white 255.
  EXPECT_EQ(gray.pixels, (std::vector<uint8_t>{76, 150, 29, 18, 124, 255}));
}

TEST(ImageDecoder, BmpWithAPaletteTopDown) {
  // 8-bit, 2x2, top-down (negative height), palette of two colours.
  std::vector<uint8_t> f(54 + 8 + 8, 0);
  f[0] = 'B', f[1] = 'M';
  put32(f, 10, 62);
  put32(f, 14, 40);
  put32(f, 18, 2);
  put32(f, 22, static_cast<uint32_t>(-2));
  f[26] = 1, f[28] = 8;
  put32(f, 46, 2);                             // two palette entries
  f[54] = 3, f[55] = 2, f[56] = 1;             // entry 0: B G R = 3 2 1
  f[58] = 30, f[59] = 20, f[60] = 10;          // entry 1
  f[62] = 0, f[63] = 1, f[66] = 1, f[67] = 0;  // rows of two indices, padded to 4
  EXPECT_EQ(decode(f).pixels, (std::vector<uint8_t>{1, 2, 3, 10, 20, 30, 10, 20, 30, 1, 2, 3}));
}

TEST(ImageDecoder, PnmBinaryAsciiAndScaled) {
  std::string p6 = "P6\n# a comment\n3 2\n255\n";
  std::vector<uint8_t> f(p6.begin(), p6.end());
  f.insert(f.end(), kRgb2x3.begin(), kRgb2x3.end());
  EXPECT_EQ(decode(f).pixels, kRgb2x3);
  // ASCII greymap with maxval 15: 15 -> 255, 0 -> 0, 7 -> round(7 * 255 / 15) = 119.
  const std::string p2 = "P2 3 1 15\n15 0 7\n";
  Decoded gray = decode(std::vector<uint8_t>(p2.begin(), p2.end()));
  EXPECT_EQ(gray.dims, (std::vector<int64_t>{1, 3, 3}));
  EXPECT_EQ(gray.pixels, (std::vector<uint8_t>{255, 255, 255, 0, 0, 0, 119, 119, 119}));
  // A binary bitmap: 1 is black.
  std::vector<uint8_t> p4 = {'P', '4', '\n', '2', ' ', '1', '\n', 0x80};
  EXPECT_EQ(decode(p4, "Grayscale").pixels, (std::vector<uint8_t>{0, 255}));
}

TEST(ImageDecoder, HostileHeadersAreClearErrors) {
  // A BMP claiming 100000 x 100000 pixels in 60 bytes: refused before anything is allocated.
  auto bmp = bmp24(3, 2, kRgb2x3);
  put32(bmp, 18, 100000);
  put32(bmp, 22, 100000);
  EXPECT_NE(decode_error(bmp).find("BMP image cannot be decoded: the pixel data is truncated"),
            std::string::npos);
  const std::string p6 = "P6 40000 40000 255\n\x01\x02";
  EXPECT_NE(decode_error(std::vector<uint8_t>(p6.begin(), p6.end())).find("truncated"),
            std::string::npos);
  const std::string junk = "GIF89a, which is not decoded";
  EXPECT_NE(decode_error(std::vector<uint8_t>(junk.begin(), junk.end()))
                .find("not an image in a known format"),
            std::string::npos);
  EXPECT_NE(decode_error({}).find("not an image in a known format"), std::string::npos);
  EXPECT_NE(decode_error(bmp24(3, 2, kRgb2x3), "YUV").find("pixel_format 'YUV'"),
            std::string::npos);
  KernelHarness floats("ImageDecoder", 20);
  floats.input(make_filled<float>({2}, {1.f, 2.f}));
  EXPECT_THROW(floats.run(1), Error);
}

#if defined(LOOM_HAVE_PNG)
TEST(ImageDecoder, PngDropsAlpha) {
  std::vector<uint8_t> rgba;
  for (size_t i = 0; i < 6; ++i) {
    rgba.insert(rgba.end(), kRgb2x3.begin() + i * 3, kRgb2x3.begin() + i * 3 + 3);
    rgba.push_back(static_cast<uint8_t>(40 * i));
  }
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = 3, image.height = 2, image.format = PNG_FORMAT_RGBA;
  png_alloc_size_t size = 0;
  ASSERT_TRUE(png_image_write_to_memory(&image, nullptr, &size, 0, rgba.data(), 0, nullptr));
  std::vector<uint8_t> file(size);
  ASSERT_TRUE(png_image_write_to_memory(&image, file.data(), &size, 0, rgba.data(), 0, nullptr));
  Decoded rgb = decode(file);
  EXPECT_EQ(rgb.dims, (std::vector<int64_t>{2, 3, 3}));
  EXPECT_EQ(rgb.pixels, kRgb2x3);
  file.resize(file.size() - 20);  // the image data cut short
  EXPECT_NE(decode_error(file).find("PNG image cannot be decoded"), std::string::npos);
}
#endif

#if defined(LOOM_HAVE_JPEG)
// A baseline JPEG of a smooth width x height RGB gradient at quality 100.
std::vector<uint8_t> encode_jpeg(int width, int height, std::vector<uint8_t>& rgb) {
  rgb.resize(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      uint8_t* p = &rgb[(static_cast<size_t>(y) * width + x) * 3];
      p[0] = static_cast<uint8_t>(8 * x), p[1] = static_cast<uint8_t>(8 * y), p[2] = 128;
    }
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 100, TRUE);
  cinfo.comp_info[0].h_samp_factor = cinfo.comp_info[0].v_samp_factor = 1;  // 4:4:4
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = &rgb[cinfo.next_scanline * static_cast<size_t>(width) * 3];
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::vector<uint8_t> file(buffer, buffer + size);
  jpeg_destroy_compress(&cinfo);
  free(buffer);
  return file;
}

TEST(ImageDecoder, JpegDecodesTruncatedAndOversizedAreErrors) {
  std::vector<uint8_t> rgb;
  const auto file = encode_jpeg(16, 8, rgb);
  Decoded out = decode(file);
  EXPECT_EQ(out.dims, (std::vector<int64_t>{8, 16, 3}));
  for (size_t i = 0; i < rgb.size(); ++i) ASSERT_NEAR(out.pixels[i], rgb[i], 4) << "at " << i;
  // Cut inside the entropy-coded data: libjpeg pads the rest (a warning), so only a cut in the
  // headers is an error; it must come back as one, not a longjmp through C++ frames.
  std::vector<uint8_t> cut(file.begin(), file.begin() + 100);
  EXPECT_NE(decode_error(cut).find("JPEG image cannot be decoded"), std::string::npos);
  // The frame header (SOF0) claiming 40000 x 40000 pixels: held to the run's tensor limit
  // before a pixel is decoded.
  std::vector<uint8_t> big = file;
  size_t sof = 2;
  while (sof + 9 < big.size() && !(big[sof] == 0xff && big[sof + 1] == 0xc0)) ++sof;
  ASSERT_LT(sof + 9, big.size());
  big[sof + 5] = 40000 >> 8, big[sof + 6] = 40000 & 0xff;  // height
  big[sof + 7] = 40000 >> 8, big[sof + 8] = 40000 & 0xff;  // width
  loom_run_control_t control{};
  control.struct_size = sizeof control;
  control.max_tensor_bytes = 64 << 20;
  RunBudgetScope scope(&control);
  loom_status_code_t code = LOOM_OK;
  const std::string error = decode_error(big, "RGB", &code);
  EXPECT_EQ(code, LOOM_ERROR_LIMIT_EXCEEDED) << error;
  EXPECT_NE(error.find("max_tensor_bytes"), std::string::npos) << error;
}
#endif

}  // namespace
}  // namespace loom::cpu

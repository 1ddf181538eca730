// ImageDecoder (20): decodes one encoded image (a 1-D uint8 tensor holding a whole file) into
// [H, W, C] uint8, C = 3 for pixel_format RGB (the default) or BGR, 1 for Grayscale. The format is
// told by the data's signature, as the reference implementation (Pillow) does:
//   JPEG (libjpeg-turbo), PNG (libpng), TIFF (libtiff), WebP (libwebp), JPEG 2000 codestreams
//   and JP2 files (OpenJPEG): Debian's libraries, found at configure time (LOOM_HAVE_<NAME>,
//   plugins/devices/cpu/CMakeLists.txt); a format whose library was not found is refused by name.
//   BMP (uncompressed 1/4/8/24/32-bit) and binary or ASCII PNM (P1-P6): decoded here.
// Grayscale uses ITU-R 601-2 luma with Pillow's rounding (L = (19595 R + 38470 G + 7471 B +
// 0x8000) >> 16) on the RGB pixels; alpha is dropped; palette images are expanded. Hostile
// files: the header's extent is checked against the run's tensor limit (the output allocation)
// before any pixel is decoded, every library reports errors as return codes (libjpeg's error
// exit returns through setjmp, never through C++ frames), and a truncated or corrupt file is
// a one-line error naming the format.
#include <algorithm>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernel.hpp"
#include "nn_common.hpp"

#if defined(LOOM_HAVE_JPEG)
#include <jpeglib.h>

#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#endif
#if defined(LOOM_HAVE_PNG)
#include <png.h>
#endif
#if defined(LOOM_HAVE_TIFF)
#include <tiffio.h>
#endif
#if defined(LOOM_HAVE_WEBP)
#include <webp/decode.h>
#endif
#if defined(LOOM_HAVE_OPENJPEG)
#include <openjpeg.h>
#endif

namespace loom::cpu {
namespace {

enum class PixelFormat { kRgb, kBgr, kGray };

// Where decoded RGB rows go: the output tensor, allocated (and held to the run's limits) once
// the header has told the extent.
class ImageSink {
 public:
  ImageSink(KernelContext& ctx, PixelFormat format) : ctx_(ctx), format_(format) {}

  // Allocates the output for a width x height image; throws a clear error for absurd sizes.
  void begin(const char* codec, uint64_t width, uint64_t height) {
    // Far below what any size_t product overflows at; the run's tensor limit is checked by the
    // allocation itself.
    constexpr uint64_t kMaxSide = uint64_t{1} << 24;
    if (width == 0 || height == 0 || width > kMaxSide || height > kMaxSide)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx_.where() + ": the " + codec + " image is " +
                                            std::to_string(width) + "x" + std::to_string(height) +
                                            " pixels; decodable images are 1 to 16777216 "
                                            "pixels on a side");
    width_ = static_cast<size_t>(width);
    height_ = static_cast<size_t>(height);
    const int64_t dims[3] = {static_cast<int64_t>(height), static_cast<int64_t>(width),
                             format_ == PixelFormat::kGray ? 1 : 3};
    out_ = sdk::data_of<uint8_t>(ctx_.allocate_output(0, LOOM_DTYPE_UINT8, dims));
  }

  size_t width() const { return width_; }
  size_t height() const { return height_; }

  // Row y from interleaved samples with `channels` per pixel: 1 gray, 2 gray+alpha, 3 RGB,
  // 4 RGBA (alpha dropped).
  void row(size_t y, const uint8_t* px, int channels) {
    uint8_t* dst = out_ + y * width_ * (format_ == PixelFormat::kGray ? 1 : 3);
    for (size_t x = 0; x < width_; ++x, px += channels) {
      const bool gray_in = channels < 3;
      const uint8_t r = px[0], g = gray_in ? px[0] : px[1], b = gray_in ? px[0] : px[2];
      put(dst, x, r, g, b);
    }
  }

  void pixel(size_t y, size_t x, uint8_t r, uint8_t g, uint8_t b) {
    put(out_ + y * width_ * (format_ == PixelFormat::kGray ? 1 : 3), x, r, g, b);
  }

 private:
  void put(uint8_t* row, size_t x, uint8_t r, uint8_t g, uint8_t b) const {
    switch (format_) {
      case PixelFormat::kRgb:
        row[3 * x] = r, row[3 * x + 1] = g, row[3 * x + 2] = b;
        break;
      case PixelFormat::kBgr:
        row[3 * x] = b, row[3 * x + 1] = g, row[3 * x + 2] = r;
        break;
      case PixelFormat::kGray:
        row[x] = static_cast<uint8_t>((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
        break;
    }
  }

  KernelContext& ctx_;
  PixelFormat format_;
  uint8_t* out_ = nullptr;
  size_t width_ = 0, height_ = 0;
};

struct Encoded {
  const uint8_t* data;
  size_t size;
  bool starts_with(const char* magic, size_t n, size_t at = 0) const {
    return size >= at + n && std::memcmp(data + at, magic, n) == 0;
  }
};

// A read cursor over the encoded bytes, for the libraries that read through callbacks (libtiff,
// OpenJPEG). Reads stop at the end; seeks past it fail.
struct MemoryStream {
  const Encoded* in;
  size_t at = 0;
  size_t read(void* buf, size_t n) {
    const size_t count = at < in->size ? std::min(n, in->size - at) : 0;
    if (count) std::memcpy(buf, in->data + at, count);
    at += count;
    return count;
  }
  bool seek(uint64_t to) {
    if (to > in->size) return false;
    at = static_cast<size_t>(to);
    return true;
  }
};

[[noreturn]] void corrupt(const KernelContext& ctx, const char* codec, const std::string& why) {
  fail(LOOM_ERROR_INVALID_ARGUMENT,
       ctx.where() + ": the " + codec + " image cannot be decoded: " + why);
}

// ---- BMP ------------------------------------------------------------------------------------

uint32_t le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint16_t le16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}

void decode_bmp(const KernelContext& ctx, const Encoded& in, ImageSink& sink) {
  const char* codec = "BMP";
  if (in.size < 26) corrupt(ctx, codec, "the file is shorter than its headers");
  const uint32_t pixels_at = le32(in.data + 10), header = le32(in.data + 14);
  if (header < 12 || in.size < 14 + uint64_t{header})
    corrupt(ctx, codec, "the info header is truncated");
  int64_t width, height;
  uint32_t bits, compression = 0, colors = 0;
  if (header == 12) {  // OS/2 BITMAPCOREHEADER
    width = le16(in.data + 18), height = static_cast<int16_t>(le16(in.data + 20));
    bits = le16(in.data + 24);
  } else {
    if (header < 40)
      corrupt(ctx, codec, "unknown info header of " + std::to_string(header) + " bytes");
    width = static_cast<int32_t>(le32(in.data + 18));
    height = static_cast<int32_t>(le32(in.data + 22));
    bits = le16(in.data + 28), compression = le32(in.data + 30), colors = le32(in.data + 46);
  }
  if (compression != 0 && !(compression == 3 && (bits == 16 || bits == 32)))
    corrupt(ctx, codec,
            "compression " + std::to_string(compression) +
                " is not supported (uncompressed and bitfield BMPs are)");
  if (bits != 1 && bits != 4 && bits != 8 && bits != 24 && bits != 32)
    corrupt(ctx, codec, std::to_string(bits) + "-bit pixels are not supported (1, 4, 8, 24, 32)");
  if (compression == 3 && bits == 32) {
    // Bitfields: only the standard 8-bit masks (what encoders write for 32-bit images).
    if (header < 52 || le32(in.data + 54) != 0x00ff0000u || le32(in.data + 58) != 0x0000ff00u ||
        le32(in.data + 62) != 0x000000ffu)
      corrupt(ctx, codec, "only 32-bit bitfields with 8-bit masks are supported");
  }
  const bool top_down = height < 0;
  const uint64_t h = static_cast<uint64_t>(top_down ? -height : height);
  if (width <= 0 || h == 0) corrupt(ctx, codec, "the image has no pixels");
  // The palette (BGRx quads, BGR triples in the OS/2 form) follows the headers.
  std::vector<uint8_t> palette;
  if (bits <= 8) {
    const uint32_t entries = colors ? colors : (1u << bits);
    const size_t quad = header == 12 ? 3 : 4;
    const uint64_t at = 14 + uint64_t{header};
    if (entries > 256 || at + uint64_t{entries} * quad > in.size)
      corrupt(ctx, codec, "the palette is truncated or larger than 256 entries");
    palette.resize(256 * 3, 0);
    for (uint32_t i = 0; i < entries; ++i)
      for (int c = 0; c < 3; ++c) palette[i * 3 + c] = in.data[at + i * quad + c];  // B, G, R
  }
  const uint64_t stride = (uint64_t(width) * bits + 31) / 32 * 4;
  if (pixels_at > in.size || stride * h > in.size - pixels_at)
    corrupt(ctx, codec, "the pixel data is truncated");
  sink.begin(codec, static_cast<uint64_t>(width), h);
  for (size_t y = 0; y < h; ++y) {
    const uint8_t* src = in.data + pixels_at + (top_down ? y : h - 1 - y) * stride;
    for (size_t x = 0; x < static_cast<size_t>(width); ++x) {
      const uint8_t* bgr;
      if (bits >= 24) {
        bgr = src + x * (bits / 8);
      } else {
        const size_t bit = x * bits;
        const unsigned index = (src[bit / 8] >> (8 - bits - bit % 8)) & ((1u << bits) - 1);
        bgr = palette.data() + index * 3;
      }
      sink.pixel(y, x, bgr[2], bgr[1], bgr[0]);
    }
  }
}

// ---- PNM (P1-P6) ----------------------------------------------------------------------------

class PnmReader {
 public:
  PnmReader(const KernelContext& ctx, const Encoded& in) : ctx_(ctx), in_(in) {}
  // The next whitespace-separated decimal of the header (comments skipped).
  uint64_t number() {
    for (;;) {
      while (at_ < in_.size && std::isspace(in_.data[at_])) ++at_;
      if (at_ < in_.size && in_.data[at_] == '#') {
        while (at_ < in_.size && in_.data[at_] != '\n') ++at_;
        continue;
      }
      break;
    }
    if (at_ >= in_.size || !std::isdigit(in_.data[at_]))
      corrupt(ctx_, "PNM", "a header field or sample is missing or not a number");
    uint64_t v = 0;
    while (at_ < in_.size && std::isdigit(in_.data[at_])) {
      v = v * 10 + (in_.data[at_++] - '0');
      if (v > (uint64_t{1} << 32)) corrupt(ctx_, "PNM", "a header field is out of range");
    }
    return v;
  }
  // ASCII bitmaps (P1) pack digits without separators.
  unsigned bit() {
    while (at_ < in_.size && (std::isspace(in_.data[at_]) || in_.data[at_] == '#')) {
      if (in_.data[at_] == '#')
        while (at_ < in_.size && in_.data[at_] != '\n') ++at_;
      else
        ++at_;
    }
    if (at_ >= in_.size || (in_.data[at_] != '0' && in_.data[at_] != '1'))
      corrupt(ctx_, "PNM", "a P1 sample is missing or not 0/1");
    return in_.data[at_++] - '0';
  }
  size_t at() const { return at_; }
  void skip(size_t n) { at_ += n; }

 private:
  const KernelContext& ctx_;
  const Encoded& in_;
  size_t at_ = 2;
};

void decode_pnm(const KernelContext& ctx, const Encoded& in, ImageSink& sink) {
  const char* codec = "PNM";
  const int kind = in.data[1] - '0';
  PnmReader r(ctx, in);
  const uint64_t width = r.number(), height = r.number();
  const uint64_t maxval = (kind == 1 || kind == 4) ? 1 : r.number();
  if (maxval == 0 || maxval > 65535) corrupt(ctx, codec, "maxval must be 1 to 65535");
  const int channels = (kind == 3 || kind == 6) ? 3 : 1;
  const bool binary = kind >= 4;
  const int sample_bytes = maxval > 255 ? 2 : 1;
  if (binary) {
    r.skip(1);  // the single whitespace after the header
    const uint64_t row_bytes =
        kind == 4 ? (width + 7) / 8 : width * static_cast<uint64_t>(channels * sample_bytes);
    if (width == 0 || r.at() > in.size || row_bytes * height > in.size - r.at())
      corrupt(ctx, codec, "the pixel data is truncated");
  }
  sink.begin(codec, width, height);
  // Samples scale to 0..255 with rounding, as Pillow does for maxval other than 255.
  auto scale = [maxval](uint64_t v) {
    return static_cast<uint8_t>(std::min<uint64_t>(255, (v * 255 + maxval / 2) / maxval));
  };
  size_t at = r.at();
  std::vector<uint8_t> px(sink.width() * 3);
  for (size_t y = 0; y < sink.height(); ++y) {
    for (size_t x = 0; x < sink.width(); ++x)
      for (int c = 0; c < channels; ++c) {
        uint64_t v;
        if (kind == 4) {
          v = (in.data[at + x / 8] >> (7 - x % 8)) & 1;
          v = 1 - v;  // PBM: 1 is black
        } else if (kind == 1) {
          v = 1 - r.bit();
        } else if (binary) {
          const uint8_t* s = in.data + at + (x * channels + c) * sample_bytes;
          v = sample_bytes == 2 ? (uint64_t(s[0]) << 8 | s[1]) : s[0];
        } else {
          v = r.number();
          if (v > maxval) corrupt(ctx, codec, "a sample exceeds maxval");
        }
        px[x * channels + c] = (kind == 1 || kind == 4) ? (v ? 255 : 0) : scale(v);
      }
    if (binary) at += kind == 4 ? (sink.width() + 7) / 8 : sink.width() * channels * sample_bytes;
    sink.row(y, px.data(), channels);
  }
}

// ---- JPEG -----------------------------------------------------------------------------------

#if defined(LOOM_HAVE_JPEG)
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);  // back into decode_jpeg_rows: only C frames are unwound
}
void jpeg_quiet(j_common_ptr, int) {}

// The libjpeg calls, between setjmp and any longjmp, with nothing but trivially destructible
// locals; the message on failure, or an empty string. `rows` receives each RGB scanline.
template <typename Rows>
std::string decode_jpeg_rows(const Encoded& in, ImageSink& sink, Rows& rows) {
  jpeg_decompress_struct cinfo;
  JpegError err{};
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_error_exit;
  err.mgr.emit_message = jpeg_quiet;  // warnings (a corrupt but readable stream) are not errors
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return err.message[0] ? err.message : "libjpeg failed";
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, in.data, static_cast<unsigned long>(in.size));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;  // CMYK and YCCK are refused by libjpeg here: a clear error
  jpeg_calc_output_dimensions(&cinfo);
  if (cinfo.output_width * 3 > rows.size()) {
    jpeg_destroy_decompress(&cinfo);
    return "the image is wider than JPEG allows";
  }
  // The sink's allocation may throw: let it (nothing is longjmp'd over), after cleaning up.
  try {
    sink.begin("JPEG", cinfo.output_width, cinfo.output_height);
  } catch (...) {
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
  jpeg_start_decompress(&cinfo);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = rows.data();
    const JDIMENSION y = cinfo.output_scanline;
    if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) break;
    sink.row(y, rows.data(), 3);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return {};
}

void decode_jpeg(const KernelContext& ctx, const Encoded& in, ImageSink& sink) {
  // Room for the widest scanline JPEG allows (65500 pixels), allocated before setjmp so that no
  // longjmp skips its destructor.
  std::vector<uint8_t> rows(65535 * 3);
  std::string error = decode_jpeg_rows(in, sink, rows);
  if (!error.empty()) corrupt(ctx, "JPEG", error);
}
#endif

// ---- PNG ------------------------------------------------------------------------------------

#if defined(LOOM_HAVE_PNG)
void decode_png(const KernelContext& ctx, const Encoded& in, ImageSink& sink) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, in.data, in.size))
    corrupt(ctx, "PNG", image.message);
  struct Free {
    png_image* p;
    ~Free() { png_image_free(p); }
  } guard{&image};
  image.format = PNG_FORMAT_RGBA;  // 16-bit samples are reduced, palettes expanded
  sink.begin("PNG", image.width, image.height);
  // Sized here in size_t (PNG_IMAGE_SIZE computes in 32 bits); rows are packed (stride 0).
  std::vector<uint8_t> pixels(sink.width() * sink.height() * 4);
  if (!png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr))
    corrupt(ctx, "PNG", image.message);
  for (size_t y = 0; y < sink.height(); ++y) sink.row(y, pixels.data() + y * sink.width() * 4, 4);
}
#endif

// ---- TIFF -----------------------------------------------------------------------------------

#if defined(LOOM_HAVE_TIFF)
tsize_t tiff_read(thandle_t h, tdata_t buf, tsize_t n) {
  return n < 0 ? 0 : static_cast<tsize_t>(static_cast<MemoryStream*>(h)->read(buf, n));
}
tsize_t tiff_write(thandle_t, tdata_t, tsize_t) {
  return 0;
}
toff_t tiff_seek(thandle_t h, toff_t off, int whence) {
  auto* s = static_cast<MemoryStream*>(h);
  const uint64_t base = whence == SEEK_CUR ? s->at : whence == SEEK_END ? s->in->size : 0;
  return s->seek(base + off) ? s->at : static_cast<toff_t>(-1);
}
int tiff_close(thandle_t) {
  return 0;
}
toff_t tiff_size(thandle_t h) {
  return static_cast<MemoryStream*>(h)->in->size;
}
int tiff_map(thandle_t, tdata_t*, toff_t*) {
  return 0;
}
void tiff_unmap(thandle_t, tdata_t, toff_t) {}

// libtiff reports through process-wide handlers: the last error of this thread is kept for the
// exception's message instead of being printed.
thread_local std::string t_tiff_error;
int tiff_error(TIFF*, void*, const char* module, const char* fmt, va_list args) {
  char text[512];
  std::vsnprintf(text, sizeof text, fmt, args);
  t_tiff_error = std::string(module ? module : "libtiff") + ": " + text;
  return 1;
}
int tiff_warning(TIFF*, void*, const char*, const char*, va_list) {
  return 1;
}

void decode_tiff(const KernelContext& ctx, const Encoded& in, ImageSink& sink) {
  MemoryStream stream{&in};
  t_tiff_error.clear();
  TIFFOpenOptions* options = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(options, tiff_error, nullptr);
  TIFFOpenOptionsSetWarningHandlerExtR(options, tiff_warning, nullptr);
  TIFF* tif = TIFFClientOpenExt("image", "rm", &stream, tiff_read, tiff_write, tiff_seek,
                                tiff_close, tiff_size, tiff_map, tiff_unmap, options);
  TIFFOpenOptionsFree(options);
  if (!tif) corrupt(ctx, "TIFF", t_tiff_error.empty() ? "not a readable TIFF" : t_tiff_error);
  struct Close {
    TIFF* t;
    ~Close() { TIFFClose(t); }
  } guard{tif};
  uint32_t width = 0, height = 0;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &height);
  sink.begin("TIFF", width, height);
  std::vector<uint32_t> raster(sink.width() * sink.height());
  if (!TIFFReadRGBAImageOriented(tif, width, height, raster.data(), ORIENTATION_TOPLEFT, 0))
    corrupt(ctx, "TIFF", t_tiff_error.empty() ? "the pixel data cannot be read" : t_tiff_error);
  for (size_t y = 0; y < sink.height(); ++y)
    for (size_t x = 0; x < sink.width(); ++x) {
      const uint32_t p = raster[y * sink.width() + x];
      sink.pixel(y, x, static_cast<uint8_t>(TIFFGetR(p)), static_cast<uint8_t>(TIFFGetG(p)),
                 static_cast<uint8_t>(TIFFGetB(p)));
    }
}
#endif

// ---- WebP -----------------------------------------------------------------------------------

#if defined(LOOM_HAVE_WEBP)
void decode_webp(const KernelContext& ctx, const Encoded& in, ImageSink& sink) {
  int width = 0, height = 0;
  if (!WebPGetInfo(in.data, in.size, &width, &height))
    corrupt(ctx, "WebP", "the header is not a valid WebP header");
  sink.begin("WebP", static_cast<uint64_t>(width), static_cast<uint64_t>(height));
  std::vector<uint8_t> pixels(sink.width() * sink.height() * 3);
  if (!WebPDecodeRGBInto(in.data, in.size, pixels.data(), pixels.size(), width * 3))
    corrupt(ctx, "WebP", "the bitstream is truncated or corrupt");
  for (size_t y = 0; y < sink.height(); ++y) sink.row(y, pixels.data() + y * sink.width() * 3, 3);
}
#endif

// ---- JPEG 2000 ------------------------------------------------------------------------------

#if defined(LOOM_HAVE_OPENJPEG)
OPJ_SIZE_T j2k_read(void* buf, OPJ_SIZE_T n, void* user) {
  auto* s = static_cast<MemoryStream*>(user);
  const size_t count = s->read(buf, n);
  return count ? count : static_cast<OPJ_SIZE_T>(-1);  // OpenJPEG's end of stream
}
OPJ_OFF_T j2k_skip(OPJ_OFF_T n, void* user) {
  auto* s = static_cast<MemoryStream*>(user);
  return n >= 0 && s->seek(s->at + static_cast<uint64_t>(n)) ? n : -1;
}
OPJ_BOOL j2k_seek(OPJ_OFF_T to, void* user) {
  return to >= 0 && static_cast<MemoryStream*>(user)->seek(static_cast<uint64_t>(to));
}
void j2k_message(const char* text, void* user) {
  auto* last = static_cast<std::string*>(user);
  *last = text;
  while (!last->empty() && last->back() == '\n') last->pop_back();
}
void j2k_quiet(const char*, void*) {}

// The sample of a component (subsampled by `step`, starting at `first` of its own grid, `count`
// long) that covers reference-grid coordinate `at`, clamped into the component.
size_t sample_index(uint64_t at, uint32_t step, uint32_t first, uint32_t count) {
  const int64_t i = static_cast<int64_t>(at / step) - static_cast<int64_t>(first);
  return static_cast<size_t>(std::clamp<int64_t>(i, 0, static_cast<int64_t>(count) - 1));
}

void decode_jpeg2000(const KernelContext& ctx, const Encoded& in, bool jp2, ImageSink& sink) {
  const char* codec = "JPEG 2000";
  MemoryStream source{&in};
  opj_stream_t* stream = opj_stream_default_create(OPJ_TRUE);
  opj_stream_set_user_data(stream, &source, nullptr);
  opj_stream_set_user_data_length(stream, in.size);
  opj_stream_set_read_function(stream, j2k_read);
  opj_stream_set_skip_function(stream, j2k_skip);
  opj_stream_set_seek_function(stream, j2k_seek);
  opj_codec_t* codec_handle = opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
  std::string last_error;
  opj_set_error_handler(codec_handle, j2k_message, &last_error);
  opj_set_warning_handler(codec_handle, j2k_quiet, nullptr);
  opj_set_info_handler(codec_handle, j2k_quiet, nullptr);
  opj_image_t* image = nullptr;
  struct Release {
    opj_stream_t* stream;
    opj_codec_t* codec;
    opj_image_t** image;
    ~Release() {
      if (*image) opj_image_destroy(*image);
      opj_destroy_codec(codec);
      opj_stream_destroy(stream);
    }
  } guard{stream, codec_handle, &image};
  opj_dparameters_t parameters;
  opj_set_default_decoder_parameters(&parameters);
  auto failed = [&](const char* what) {
    corrupt(ctx, codec, last_error.empty() ? std::string(what) : last_error);
  };
  if (!opj_setup_decoder(codec_handle, &parameters)) failed("the decoder cannot be set up");
  if (!opj_read_header(stream, codec_handle, &image) || !image) failed("the header is invalid");
  // The extent is checked (and the output allocated) before OpenJPEG allocates its own
  // component planes for the whole image.
  if (image->x1 <= image->x0 || image->y1 <= image->y0 || image->numcomps == 0)
    failed("the image has no pixels");
  // OpenJPEG allocates a plane of 32-bit samples per component: images have 1 to 4 (gray,
  // gray+alpha, RGB, RGBA), and a header claiming thousands would cost thousands of planes.
  if (image->numcomps > 4)
    failed(
        ("the image has " + std::to_string(image->numcomps) + " components; 1 to 4 are supported")
            .c_str());
  sink.begin(codec, image->x1 - image->x0, image->y1 - image->y0);
  if (!opj_decode(codec_handle, stream, image) || !opj_end_decompress(codec_handle, stream))
    failed("the codestream is truncated or corrupt");
  const int channels = image->numcomps >= 3 ? 3 : 1;
  for (int c = 0; c < channels; ++c) {
    const opj_image_comp_t& comp = image->comps[c];
    if (!comp.data || comp.dx == 0 || comp.dy == 0 || comp.w == 0 || comp.h == 0 ||
        comp.prec == 0 || comp.prec > 31)
      failed("a component has no samples");
  }
  // Components may be subsampled (dx, dy) and have any precision: each output pixel reads the
  // sample covering it, scaled to 8 bits.
  std::vector<uint8_t> px(sink.width() * 3);
  for (size_t y = 0; y < sink.height(); ++y) {
    for (int c = 0; c < channels; ++c) {
      const opj_image_comp_t& comp = image->comps[c];
      const size_t cy = sample_index(y + image->y0, comp.dy, comp.y0, comp.h);
      const int64_t offset = comp.sgnd ? int64_t{1} << (comp.prec - 1) : 0;
      const int64_t max = (int64_t{1} << comp.prec) - 1;
      for (size_t x = 0; x < sink.width(); ++x) {
        const size_t cx = sample_index(x + image->x0, comp.dx, comp.x0, comp.w);
        const int64_t v = std::clamp<int64_t>(comp.data[cy * comp.w + cx] + offset, 0, max);
        px[x * 3 + c] = static_cast<uint8_t>(comp.prec == 8 ? v : (v * 255 + max / 2) / max);
      }
    }
    sink.row(y, px.data(), channels);
  }
}
#endif

// ---- the op ---------------------------------------------------------------------------------

[[noreturn, maybe_unused]] void missing_library(const KernelContext& ctx, const char* codec,
                                                const char* package) {
  fail(LOOM_ERROR_UNSUPPORTED, ctx.where() + ": the data is a " + codec +
                                   " image, and this cpu device was built without " + package +
                                   ": rebuild Loom with it installed");
}

void image_decoder(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.dtype != LOOM_DTYPE_UINT8 || x.rank != 1)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() +
             ": encoded_stream must be a 1-D uint8 tensor (the bytes of an image "
             "file), got " +
             sdk::dtype_name(x.dtype) + " " + nn::shape_string(x));
  const std::string name = ctx.attrs().get_string("pixel_format", "RGB");
  PixelFormat format;
  if (name == "RGB")
    format = PixelFormat::kRgb;
  else if (name == "BGR")
    format = PixelFormat::kBgr;
  else if (name == "Grayscale")
    format = PixelFormat::kGray;
  else
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": pixel_format '" + name + "' is not one of RGB, BGR, Grayscale");
  const Encoded in{static_cast<const uint8_t*>(x.data), static_cast<size_t>(x.dims[0])};
  ImageSink sink(ctx, format);
  if (in.starts_with("\xff\xd8\xff", 3)) {
#if defined(LOOM_HAVE_JPEG)
    return decode_jpeg(ctx, in, sink);
#else
    missing_library(ctx, "JPEG", "libjpeg (libjpeg62-turbo-dev)");
#endif
  }
  if (in.starts_with("\x89PNG\r\n\x1a\n", 8)) {
#if defined(LOOM_HAVE_PNG)
    return decode_png(ctx, in, sink);
#else
    missing_library(ctx, "PNG", "libpng (libpng-dev)");
#endif
  }
  if (in.starts_with("II*\0", 4) || in.starts_with("MM\0*", 4)) {
#if defined(LOOM_HAVE_TIFF)
    return decode_tiff(ctx, in, sink);
#else
    missing_library(ctx, "TIFF", "libtiff (libtiff-dev)");
#endif
  }
  if (in.starts_with("RIFF", 4) && in.starts_with("WEBP", 4, 8)) {
#if defined(LOOM_HAVE_WEBP)
    return decode_webp(ctx, in, sink);
#else
    missing_library(ctx, "WebP", "libwebp (libwebp-dev)");
#endif
  }
  const bool jp2 = in.starts_with("\0\0\0\x0cjP  \r\n\x87\n", 12);
  if (jp2 || in.starts_with("\xff\x4f\xff\x51", 4)) {
#if defined(LOOM_HAVE_OPENJPEG)
    return decode_jpeg2000(ctx, in, jp2, sink);
#else
    missing_library(ctx, "JPEG 2000", "OpenJPEG (libopenjp2-7-dev)");
#endif
  }
  if (in.starts_with("BM", 2)) return decode_bmp(ctx, in, sink);
  if (in.size >= 3 && in.data[0] == 'P' && in.data[1] >= '1' && in.data[1] <= '6' &&
      std::isspace(in.data[2]))
    return decode_pnm(ctx, in, sink);
  fail(LOOM_ERROR_INVALID_ARGUMENT,
       ctx.where() + ": the " + std::to_string(in.size) +
           " bytes are not an image in a known format (JPEG, PNG, TIFF, WebP, JPEG 2000, BMP, "
           "PNM)");
}

}  // namespace

LOOM_CPU_KERNEL("ImageDecoder", 20, image_decoder, nullptr);

}  // namespace loom::cpu

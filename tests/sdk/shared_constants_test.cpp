// loom/shared_constants.hpp: device objects made from constant bytes are shared by content and
// form while someone holds them, never confused across contents or forms, and bytes the host
// vouches for by content id are hashed once.
#include <gtest/gtest.h>

#include <loom/shared_constants.hpp>
#include <string>
#include <vector>

namespace loom::sdk {
namespace {

// The reference implementation's test vectors (SipHash-2-4, 64-bit output, key 00..0f, message
// 00..len-1): the key must make an unkeyed collision search useless, so the function must be
// SipHash itself.
TEST(SharedConstants, SipHashMatchesItsReferenceVectors) {
  const uint64_t key[2] = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
  unsigned char message[64];
  for (int i = 0; i < 64; ++i) message[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(siphash24(key, message, 0), 0x726fdb47dd0e0e31ULL);
  EXPECT_EQ(siphash24(key, message, 1), 0x74f839c593dc67fdULL);
  EXPECT_EQ(siphash24(key, message, 8), 0x93f5f5799a932462ULL);
  EXPECT_EQ(siphash24(key, message, 15), 0xa129ca6149be45e5ULL);
  EXPECT_EQ(siphash24(key, message, 63), 0x958a324ceb064572ULL);
}

// An object that records what it was made from.
std::shared_ptr<void> object_of(const std::vector<float>& bytes, int& made) {
  ++made;
  return std::make_shared<std::vector<float>>(bytes);
}

TEST(SharedConstants, SharedByContentAndFormWhileHeld) {
  std::vector<float> w(1000), v(1000);
  for (size_t i = 0; i < w.size(); ++i) w[i] = v[i] = static_cast<float>(i) * 0.5f;
  v[999] = -1.f;  // differs in its last element only
  const size_t bytes = w.size() * sizeof(float);
  int made = 0;
  auto get = [&](const std::vector<float>& data, const std::string& form) {
    return shared_constant(data.data(), bytes, form, 0, bytes,
                           [&] { return object_of(data, made); });
  };
  std::shared_ptr<void> a = get(w, "f16");
  std::vector<float> copy = w;  // the same content at another address
  EXPECT_EQ(get(copy, "f16"), a);
  EXPECT_EQ(made, 1);
  std::shared_ptr<void> b = get(w, "f32");  // another form of the same bytes
  std::shared_ptr<void> c = get(v, "f16");  // other bytes
  EXPECT_NE(b, a);
  EXPECT_NE(c, a);
  EXPECT_EQ(made, 3);
  EXPECT_EQ(*static_cast<std::vector<float>*>(c.get()), v);
  const SharedConstantStats held = shared_constant_stats();
  // Let go by everyone: made again on the next request.
  a.reset();
  EXPECT_EQ(shared_constant_stats().live_objects, held.live_objects - 1);
  std::shared_ptr<void> again = get(w, "f16");
  EXPECT_EQ(made, 4);
  EXPECT_EQ(*static_cast<std::vector<float>*>(again.get()), w);
}

// Bytes the host vouches for by content id (plugin ABI 1.7) are hashed once, whatever forms
// they are made into; bytes without an id are hashed at every request.
TEST(SharedConstants, ContentIdsAreHashedOnce) {
  std::vector<float> w(64 * 48);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 97) * 0.25f;
  const size_t bytes = w.size() * sizeof(float);
  int made = 0;
  std::vector<std::shared_ptr<void>> held;
  auto request = [&](const std::string& form, uint64_t id) {
    held.push_back(
        shared_constant(w.data(), bytes, form, id, bytes, [&] { return object_of(w, made); }));
    return held.back().get();
  };
  // An id no other test of this process uses.
  const uint64_t id = uint64_t{1} << 62;
  const uint64_t start = shared_constant_stats().hashed_bytes;
  void* a = request("plain", id);
  EXPECT_EQ(shared_constant_stats().hashed_bytes - start, bytes);
  EXPECT_EQ(request("plain", id), a);       // a hit, not hashed again
  EXPECT_NE(request("transposed", id), a);  // another form: a new object, still not hashed
  EXPECT_EQ(shared_constant_stats().hashed_bytes - start, bytes);
  EXPECT_EQ(request("plain", 0), a);  // the same bytes without an id: found by their hash
  EXPECT_EQ(shared_constant_stats().hashed_bytes - start, 2 * bytes);
  EXPECT_EQ(made, 2);
}

}  // namespace
}  // namespace loom::sdk

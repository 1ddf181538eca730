#include "shared_constants.hpp"

#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace loom::onednn {
namespace {

uint64_t rotl(uint64_t x, int b) {
  return (x << b) | (x >> (64 - b));
}

void sip_round(uint64_t& v0, uint64_t& v1, uint64_t& v2, uint64_t& v3) {
  v0 += v1;
  v1 = rotl(v1, 13);
  v1 ^= v0;
  v0 = rotl(v0, 32);
  v2 += v3;
  v3 = rotl(v3, 16);
  v3 ^= v2;
  v0 += v3;
  v3 = rotl(v3, 21);
  v3 ^= v0;
  v2 += v1;
  v1 = rotl(v1, 17);
  v1 ^= v2;
  v2 = rotl(v2, 32);
}

uint64_t load_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

struct Entry {
  uint64_t content_id = 0;  // the host's id of the source bytes, 0 when none was given
  size_t bytes = 0;
  dnnl::memory::desc src_md, md;
  std::string packing;
  std::weak_ptr<void> block;
};

struct Registry {
  std::mutex mutex;
  uint64_t key[2] = {0, 0};
  std::unordered_map<uint64_t, std::vector<Entry>> entries;
  // content_id -> hash of those bytes, for ids some live entry was made from (sweep() drops
  // the rest, so the map is bounded by the live blocks).
  std::unordered_map<uint64_t, uint64_t> hash_of_id;
  uint64_t hits = 0, misses = 0, hashed_bytes = 0;
  size_t inserts_since_sweep = 0;

  Registry() {
    std::random_device random;
    for (uint64_t& k : key) k = (uint64_t{random()} << 32) ^ random();
  }
  // Drops the entries whose block every program has let go.
  void sweep() {
    std::unordered_map<uint64_t, uint64_t> live_ids;
    for (auto it = entries.begin(); it != entries.end();) {
      std::erase_if(it->second, [](const Entry& e) { return e.block.expired(); });
      for (const Entry& e : it->second)
        if (e.content_id) live_ids.emplace(e.content_id, it->first);
      it = it->second.empty() ? entries.erase(it) : std::next(it);
    }
    hash_of_id = std::move(live_ids);
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

uint64_t siphash24(const uint64_t key[2], const void* bytes, size_t size) {
  uint64_t v0 = 0x736f6d6570736575ULL ^ key[0], v1 = 0x646f72616e646f6dULL ^ key[1];
  uint64_t v2 = 0x6c7967656e657261ULL ^ key[0], v3 = 0x7465646279746573ULL ^ key[1];
  const auto* p = static_cast<const unsigned char*>(bytes);
  const size_t whole = size / 8 * 8;
  for (size_t i = 0; i < whole; i += 8) {
    const uint64_t m = load_le64(p + i);
    v3 ^= m;
    sip_round(v0, v1, v2, v3);
    sip_round(v0, v1, v2, v3);
    v0 ^= m;
  }
  uint64_t last = uint64_t{size & 0xff} << 56;
  for (size_t i = 0; i < size - whole; ++i) last |= uint64_t{p[whole + i]} << (8 * i);
  v3 ^= last;
  sip_round(v0, v1, v2, v3);
  sip_round(v0, v1, v2, v3);
  v0 ^= last;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) sip_round(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

std::shared_ptr<void> shared_reordered_constant(
    const void* data, const dnnl::memory::desc& src_md, const dnnl::memory::desc& md,
    const std::function<std::shared_ptr<void>()>& make,
    const std::function<void(void* block)>& reorder_into, const char* packing,
    uint64_t content_id) {
  Registry& r = registry();
  const size_t src_bytes = src_md.get_size();
  std::optional<uint64_t> known;
  if (content_id) {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.hash_of_id.find(content_id);
    if (it != r.hash_of_id.end()) known = it->second;
  }
  // Hashed outside the lock: it is the slow part, and another compile may hash meanwhile.
  const uint64_t hash = known ? *known : siphash24(r.key, data, src_bytes);
  // Held while a missing block is made: two sessions compiling the same model at once then
  // reorder each weight once between them, not once each.
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!known) r.hashed_bytes += src_bytes;
  if (content_id) r.hash_of_id.emplace(content_id, hash);
  std::vector<Entry>& bucket = r.entries[hash];
  for (const Entry& e : bucket)
    if (e.bytes == src_bytes && e.src_md == src_md && e.md == md && e.packing == packing)
      if (std::shared_ptr<void> block = e.block.lock()) {
        ++r.hits;
        return block;
      }
  ++r.misses;
  std::shared_ptr<void> block = make();
  reorder_into(block.get());
  std::erase_if(bucket, [](const Entry& e) { return e.block.expired(); });
  bucket.push_back({content_id, src_bytes, src_md, md, packing, block});
  if (++r.inserts_since_sweep >= 1024) {
    r.sweep();
    r.inserts_since_sweep = 0;
  }
  return block;
}

SharedConstantStats shared_constant_stats() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  SharedConstantStats s;
  s.hits = r.hits;
  s.misses = r.misses;
  s.hashed_bytes = r.hashed_bytes;
  for (const auto& [hash, bucket] : r.entries)
    for (const Entry& e : bucket)
      if (!e.block.expired()) {
        ++s.live_blocks;
        s.live_bytes += e.md.get_size();
      }
  return s;
}

}  // namespace loom::onednn

// Device objects made from constant bytes, shared by content. A device compiles one program per
// input shape of a model with symbolic dimensions, and a server opens several sessions of one
// model: each used to hold its own reordered weights (onednn: BERT-base 418 MiB a program) or
// its own upload of them (opencl), once per program. shared_constant() makes the object for a
// given content and form once per process and shares it, reference counted: it lives while a
// program holds it.
//
// Identity is by content, not by address: the core frees constant bytes after compile (ABI 1.3
// constant_copied), so an address may come back holding other data. The key is a 64-bit
// SipHash-2-4 of the bytes under a key drawn at random per process (a model cannot be crafted
// to collide with another model's weights without knowing it), the byte count, and `form`:
// everything else that decides the object (the layout it is reordered into, the storage type,
// the device context it lives in). Header-only: each plugin has its own registry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace loom::sdk {

namespace shared_detail {

inline uint64_t rotl(uint64_t x, int b) {
  return (x << b) | (x >> (64 - b));
}

inline void sip_round(uint64_t& v0, uint64_t& v1, uint64_t& v2, uint64_t& v3) {
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

inline uint64_t load_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

struct Entry {
  uint64_t content_id = 0;  // the host's id of the source bytes, 0 when none was given
  size_t bytes = 0;
  std::string form;
  size_t object_bytes = 0;  // what the object holds, for statistics
  std::weak_ptr<void> object;
};

struct Registry {
  std::mutex mutex;
  uint64_t key[2] = {0, 0};
  std::unordered_map<uint64_t, std::vector<Entry>> entries;
  // content_id -> hash of those bytes, for ids some live entry was made from (sweep() drops
  // the rest, so the map is bounded by the live objects).
  std::unordered_map<uint64_t, uint64_t> hash_of_id;
  uint64_t hits = 0, misses = 0, hashed_bytes = 0;
  size_t inserts_since_sweep = 0;

  Registry() {
    std::random_device random;
    for (uint64_t& k : key) k = (uint64_t{random()} << 32) ^ random();
  }
  // Drops the entries whose object every program has let go.
  void sweep() {
    std::unordered_map<uint64_t, uint64_t> live_ids;
    for (auto it = entries.begin(); it != entries.end();) {
      std::erase_if(it->second, [](const Entry& e) { return e.object.expired(); });
      for (const Entry& e : it->second)
        if (e.content_id) live_ids.emplace(e.content_id, it->first);
      it = it->second.empty() ? entries.erase(it) : std::next(it);
    }
    hash_of_id = std::move(live_ids);
  }
};

inline Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace shared_detail

// SipHash-2-4 of `bytes` under a 128-bit key (exposed for its test vectors).
inline uint64_t siphash24(const uint64_t key[2], const void* bytes, size_t size) {
  using shared_detail::load_le64;
  using shared_detail::sip_round;
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

// The object made from the `bytes` bytes at `data` in `form`: a live one made earlier from the
// same bytes in the same form, else `make()`'s (which holds `object_bytes` bytes). `content_id`,
// when nonzero, is the host's identity of exactly these bytes (plugin ABI 1.7): their hash is
// then computed once per id, not once per compile (a 0.5B-parameter decoder layer's 60 MB took
// ~30 ms to hash at every step of a generation loop). Thread-safe; the registry's lock is held
// while `make` runs, so two sessions compiling the same model at once make each object once
// between them.
inline std::shared_ptr<void> shared_constant(const void* data, size_t bytes,
                                             const std::string& form, uint64_t content_id,
                                             size_t object_bytes,
                                             const std::function<std::shared_ptr<void>()>& make) {
  shared_detail::Registry& r = shared_detail::registry();
  std::optional<uint64_t> known;
  if (content_id) {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.hash_of_id.find(content_id);
    if (it != r.hash_of_id.end()) known = it->second;
  }
  // Hashed outside the lock: it is the slow part, and another compile may hash meanwhile.
  const uint64_t hash = known ? *known : siphash24(r.key, data, bytes);
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!known) r.hashed_bytes += bytes;
  if (content_id) r.hash_of_id.emplace(content_id, hash);
  std::vector<shared_detail::Entry>& bucket = r.entries[hash];
  for (const shared_detail::Entry& e : bucket)
    if (e.bytes == bytes && e.form == form)
      if (std::shared_ptr<void> object = e.object.lock()) {
        ++r.hits;
        return object;
      }
  ++r.misses;
  std::shared_ptr<void> object = make();
  std::erase_if(bucket, [](const shared_detail::Entry& e) { return e.object.expired(); });
  bucket.push_back({content_id, bytes, form, object_bytes, object});
  if (++r.inserts_since_sweep >= 1024) {
    r.sweep();
    r.inserts_since_sweep = 0;
  }
  return object;
}

struct SharedConstantStats {
  uint64_t hits = 0, misses = 0;
  uint64_t hashed_bytes = 0;  // hashed so far (bytes known by content_id are hashed once)
  size_t live_objects = 0, live_bytes = 0;
};

inline SharedConstantStats shared_constant_stats() {
  shared_detail::Registry& r = shared_detail::registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  SharedConstantStats s;
  s.hits = r.hits;
  s.misses = r.misses;
  s.hashed_bytes = r.hashed_bytes;
  for (const auto& [hash, bucket] : r.entries)
    for (const shared_detail::Entry& e : bucket)
      if (!e.object.expired()) {
        ++s.live_objects;
        s.live_bytes += e.object_bytes;
      }
  return s;
}

}  // namespace loom::sdk

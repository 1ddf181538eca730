// The on-disk layout of a .loom file (docs/loom-format.md is the specification).
//
//   header (64 bytes)   magic "LOOMMODL", binary version, graph-spec revision, file size,
//                       section count
//   section table       one 24-byte entry per section: kind, offset, size
//   graph section       the model (opsets, metadata, graph) in the compact encoding below
//   weights section     constants' bytes, each tensor at a 64-byte aligned offset
//
// All integers are little-endian. The binary version numbers the container and encoding; the
// graph-spec revision numbers what the graph means (which fields exist, how ops are named),
// the way CTranslate2 separates its binary version from its model spec revision.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom::loomfmt {

inline constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'M', 'O', 'D', 'L'};
// Version 1: the first release. Readers accept every version up to their own.
inline constexpr uint32_t kBinaryVersion = 1;
// Revision 1: ONNX operator semantics, graph as in plugin ABI 1.0 (values, nodes, attributes,
// nested graphs).
// Revision 2: values may be sequences or optionals (kValueSequence / kValueOptional, plugin ABI
// 1.2), their dtype and shape describing the elements. Writers use it only for models that have
// such values, so every other file stays readable by revision-1 readers.
inline constexpr uint32_t kGraphSpecRevision = 2;
inline constexpr uint32_t kFirstContainerRevision = 2;

inline constexpr size_t kHeaderSize = 64;
inline constexpr size_t kSectionEntrySize = 24;
inline constexpr size_t kWeightAlignment = 64;
inline constexpr uint32_t kMaxSections = 64;
inline constexpr int kMaxGraphDepth = 64;

enum SectionKind : uint32_t {
  kSectionGraph = 1,
  kSectionWeights = 2,
};

// Value flags stored in the file (same bits as LOOM_VALUE_*).
inline constexpr uint32_t kValueInput = 0x1;
inline constexpr uint32_t kValueOutput = 0x2;
inline constexpr uint32_t kValueConstant = 0x4;
inline constexpr uint32_t kValueOuterScope = 0x8;
inline constexpr uint32_t kValueSequence = 0x10;  // revision 2
inline constexpr uint32_t kValueOptional = 0x20;  // revision 2

inline size_t align_up(size_t n, size_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

}  // namespace loom::loomfmt

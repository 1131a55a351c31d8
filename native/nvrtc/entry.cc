#include "nvrtc/entry.h"

#include <array>
#include <cstring>

namespace ck {
namespace nvrtc {

namespace {

constexpr uint64_t kPoly = 0xc96c5795d7870f42ULL;  // 0x42f0e1eba9ea3693 reflected

// One byte at a time through a 256-entry table: about 3 µs for a small kernel's 5 KB entry, and the
// same few lines as the JavaScript twin in cache.ts.
std::array<uint64_t, 256> makeTable() {
  std::array<uint64_t, 256> t{};
  for (uint64_t i = 0; i < 256; ++i) {
    uint64_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}

uint32_t readU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

}  // namespace

uint64_t crc64(const uint8_t* data, size_t size) {
  static const std::array<uint64_t, 256> table = makeTable();
  uint64_t c = ~uint64_t{0};
  for (size_t i = 0; i < size; ++i) c = table[(c ^ data[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

bool checkEntry(const uint8_t* data, size_t size, const std::string& key, EntryLayout* layout) {
  if (size < kEntryHead + kEntrySum || std::memcmp(data, "CKKERNL2", 8) != 0) return false;
  const size_t metaLength = readU32(data + 8), codeLength = readU32(data + 12);
  // In 64 bits: the two lengths cannot wrap the sum.
  if (uint64_t{kEntryHead} + metaLength + codeLength + kEntrySum != uint64_t{size}) return false;
  if (key.size() != 64 || std::memcmp(data + 24, key.data(), 64) != 0) return false;
  uint64_t stored = 0;
  for (int i = 7; i >= 0; --i) stored = stored << 8 | data[size - kEntrySum + i];
  if (crc64(data, size - kEntrySum) != stored) return false;
  layout->metaOffset = kEntryHead;
  layout->metaLength = metaLength;
  layout->codeOffset = kEntryHead + metaLength;
  layout->codeLength = codeLength;
  layout->cubin = (readU32(data + 16) & 1) != 0;
  layout->arch = readU32(data + 20);
  return true;
}

}  // namespace nvrtc
}  // namespace ck

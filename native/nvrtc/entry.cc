#include "nvrtc/entry.h"

#include <array>
#include <cstring>

namespace ck {
namespace nvrtc {

namespace {

constexpr uint64_t kPoly = 0xc96c5795d7870f42ULL;  // 0x42f0e1eba9ea3693 reflected

// Slicing by 8: table k gives the CRC of a byte followed by k zero bytes, so eight bytes are folded in
// with eight independent lookups instead of eight dependent ones. A byte at a time took 2.4 ns a byte
// on the development machine (16.5 µs of a small kernel's 7 KB entry, 2.4 ms of 1 MB), more than a
// SHA-256 with the CPU's SHA instructions; this takes 0.55 ns. lib/kernels/checksum.ts computes the
// same a byte at a time (entries written, and read without the addon's reader).
using Tables = std::array<std::array<uint64_t, 256>, 8>;

Tables makeTables() {
  Tables t{};
  for (uint64_t i = 0; i < 256; ++i) {
    uint64_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (size_t k = 1; k < 8; ++k)
    for (size_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  return t;
}

uint32_t readU32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

}  // namespace

uint64_t crc64(const uint8_t* data, size_t size) {
  static const Tables t = makeTables();
  uint64_t c = ~uint64_t{0};
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    // The next eight bytes as a little-endian number, whatever the host's byte order.
    uint64_t v = 0;
    for (int b = 7; b >= 0; --b) v = v << 8 | data[i + b];
    c ^= v;
    c = t[7][c & 0xff] ^ t[6][(c >> 8) & 0xff] ^ t[5][(c >> 16) & 0xff] ^ t[4][(c >> 24) & 0xff] ^
        t[3][(c >> 32) & 0xff] ^ t[2][(c >> 40) & 0xff] ^ t[1][(c >> 48) & 0xff] ^ t[0][c >> 56];
  }
  for (; i < size; ++i) c = t[0][(c ^ data[i]) & 0xff] ^ (c >> 8);
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

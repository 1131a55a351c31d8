// The kernel cache's entry format, checked natively so that a disk hit reads and checks its entry in one
// call (binding.cc, kernelsReadEntry): a SHA-256 of the entry in JavaScript cost ~35 µs of a process's
// second hit on an H100 host. lib/kernels/cache.ts writes entries and checks them the same way in
// JavaScript (encodeEntry, entryParts, lib/kernels/checksum.ts); the two must agree byte for byte.
//
//   offset  size  what
//        0     8  magic "CKKERNL2"
//        8     4  length of the metadata (JSON), little-endian
//       12     4  length of the code
//       16     4  flags: bit 0 set when the code is a cubin (else NUL-terminated PTX)
//       20     4  the architecture it was compiled for (90 for sm_90)
//       24    64  the entry's key (a SHA-256 in hex), so a file under another name is never taken
//       88     …  the metadata, then the code
//      end     8  CRC-64/XZ of every byte before it, little-endian
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ck {
namespace nvrtc {

constexpr size_t kEntryHead = 88;
constexpr size_t kEntrySum = 8;

// CRC-64/XZ (ECMA-182 polynomial, reflected, all ones in and out): "123456789" gives 0x995dc9bbdf1939fa.
// A checksum against truncated or damaged files, not against tampering (the key is the SHA-256).
uint64_t crc64(const uint8_t* data, size_t size);

struct EntryLayout {
  size_t metaOffset = 0, metaLength = 0;
  size_t codeOffset = 0, codeLength = 0;
  bool cubin = false;
  uint32_t arch = 0;
};

// Whether `data` is one whole entry for `key` (magic, lengths, key and checksum); its layout if so.
bool checkEntry(const uint8_t* data, size_t size, const std::string& key, EntryLayout* layout);

}  // namespace nvrtc
}  // namespace ck

// CRC-64/XZ, the kernel cache's entry checksum (lib/kernels/cache.ts), in 32-bit halves: JavaScript's
// bitwise operators stop at 32 bits, and BigInt arithmetic per byte would cost more than the read it
// checks. native/nvrtc/entry.cc computes the same in C++ for a disk hit; the two must agree.

/** The reflected ECMA-182 polynomial, 0xc96c5795d7870f42, as its low and high halves. */
const POLY_LO = 0xd7870f42;
const POLY_HI = 0xc96c5795;

function makeTable(): [Uint32Array, Uint32Array] {
  const lo = new Uint32Array(256);
  const hi = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let l = i;
    let h = 0;
    for (let k = 0; k < 8; k++) {
      const odd = l & 1;
      l = ((l >>> 1) | (h << 31)) >>> 0;
      h >>>= 1;
      if (odd) {
        l = (l ^ POLY_LO) >>> 0;
        h = (h ^ POLY_HI) >>> 0;
      }
    }
    lo[i] = l;
    hi[i] = h;
  }
  return [lo, hi];
}

let table: [Uint32Array, Uint32Array] | null = null;

/** CRC-64/XZ of `data` as 8 little-endian bytes ("123456789" gives 0x995dc9bbdf1939fa). */
export function crc64(data: Uint8Array): Buffer {
  const [tlo, thi] = (table ??= makeTable());
  let lo = 0xffffffff;
  let hi = 0xffffffff;
  for (let i = 0; i < data.length; i++) {
    const j = (lo ^ data[i]) & 0xff;
    lo = (((lo >>> 8) | (hi << 24)) ^ tlo[j]) >>> 0;
    hi = ((hi >>> 8) ^ thi[j]) >>> 0;
  }
  const out = Buffer.alloc(8);
  out.writeUInt32LE(~lo >>> 0, 0);
  out.writeUInt32LE(~hi >>> 0, 4);
  return out;
}

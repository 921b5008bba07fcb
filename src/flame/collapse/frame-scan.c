/*
 * stackcollapse-perf's frame-line scan as WebAssembly (see src/flame/collapse/frame-scan.ts for the memory layout
 * and the contract of each export). Compiled by scripts/collapse-wasm.mjs (clang --target=wasm32 -O2, custom sections dropped) into frame-scan-wasm.ts; no libc,
 * no globals, no stack: every address is a constant or a value read from the state block at address 64.
 */
typedef unsigned int u32;
typedef unsigned long long u64;

#define W(a) (*(int *)(unsigned long)(a))
#define B(a) (*(unsigned char *)(unsigned long)(a))

/* State block (byte addresses; none at 0, which C treats as a null pointer). */
#define ST_PREV 64
#define ST_TAB 68
#define ST_CUR 72
#define ST_CURLEN 76
#define ST_CURCAP 80
#define ST_HASH 84
#define ST_TABLES 96 /* 16 bytes a table: slots address, slot mask, first entry */
#define CLS 256      /* 256 byte classes: 1 blank, 2 word, 4 newline */

/* Record: hash, key length, mode, id count n, four (successor, length) pairs, n ids, key bytes. */
#define R_HASH 0
#define R_LEN 4
#define R_MODE 8
#define R_N 12
#define R_SUCC 16
#define R_IDS 48

static inline u64 ld64(u32 a) {
  u64 v;
  __builtin_memcpy(&v, (const void *)(unsigned long)a, 8);
  return v;
}

static inline __attribute__((always_inline)) u32 hash(u32 p, u32 end) {
  u32 len = end - p;
  u64 h = 0x9e3779b97f4a7c15ull;
  u32 i = p;
  for (; i + 8 <= end; i += 8) {
    h = (h ^ ld64(i)) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  if (i < end) {
    u64 v = 0;
    if (len >= 8) {
      v = ld64(end - 8);
    } else {
      for (; i < end; i++) v = (v << 8) | B(i);
    }
    h = (h ^ v) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  h = (h ^ len) * 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 32;
  return (u32)h;
}

/* Whether record e's key is the bytes [p, p + len). */
static inline __attribute__((always_inline)) int same(u32 p, u32 e, u32 len) {
  u32 k = e + R_IDS + ((u32)W(e + R_N) << 2);
  if (len < 8) {
    for (u32 j = 0; j < len; j++)
      if (B(p + j) != B(k + j)) return 0;
    return 1;
  }
  u32 last = len - 8;
  for (u32 j = 0; j < last; j += 8)
    if (ld64(p + j) != ld64(k + j)) return 0;
  return ld64(p + last) == ld64(k + last);
}

static inline __attribute__((always_inline)) int find(u32 tb, u32 p, u32 end, u32 h) {
  u32 slots = W(tb);
  u32 mask = W(tb + 4);
  u32 len = end - p;
  for (u32 s = h & mask;; s = (s + 1) & mask) {
    int e = W(slots + (s << 2));
    if (e < 0) return -1;
    if ((u32)W(e + R_HASH) == h && (u32)W(e + R_LEN) == len && same(p, e, len)) return e;
  }
}

/*
 * The entry of the key [p, end) in the current table: first the successors of the previous entry (or the table's
 * first entry at a sample's start), then by hash. A hit by hash is linked as the previous entry's most recent
 * successor (or becomes the first entry). Returns -1 when absent (its hash is then at ST_HASH).
 */
static inline __attribute__((always_inline)) int lookupIn(u32 p, u32 end) {
  u32 tb = ST_TABLES + ((u32)W(ST_TAB) << 4);
  int prev = W(ST_PREV);
  u32 len = end - p;
  if (prev >= 0) {
    for (u32 k = prev + R_SUCC; k < (u32)prev + R_IDS; k += 8) {
      int s = W(k);
      if (s < 0) break;
      if ((u32)W(k + 4) == len && same(p, s, len)) return s;
    }
  } else {
    int f = W(tb + 8);
    if (f >= 0 && (u32)W(f + R_LEN) == len && same(p, f, len)) return f;
  }
  u32 h = hash(p, end);
  W(ST_HASH) = h;
  int e = find(tb, p, end, h);
  if (e < 0) return -1;
  if (prev >= 0) {
    u32 q = prev;
    W(q + 44) = W(q + 36);
    W(q + 40) = W(q + 32);
    W(q + 36) = W(q + 28);
    W(q + 32) = W(q + 24);
    W(q + 28) = W(q + 20);
    W(q + 24) = W(q + 16);
    W(q + 16) = e;
    W(q + 20) = W(e + R_LEN);
  } else {
    W(tb + 8) = e;
  }
  return e;
}

__attribute__((export_name("lookup"))) int lookup(u32 p, u32 end) { return lookupIn(p, end); }

/* The position of the first "\n" in [i, end), or end. */
static inline __attribute__((always_inline)) u32 findNewline(u32 i, u32 end) {
  for (; i + 8 <= end; i += 8) {
    u64 v = ld64(i) ^ 0x0a0a0a0a0a0a0a0aull;
    u64 t = (v - 0x0101010101010101ull) & ~v & 0x8080808080808080ull;
    if (t) return i + ((u32)__builtin_ctzll(t) >> 3);
  }
  while (i < end && B(i) != 10) i++;
  return i;
}

/*
 * Frame lines of the current sample from pos: each line starting with a tab or space, with an address and text
 * after it, whose text is in the table with mode 0 (ids) gets its ids appended to the current stack. Stops at the
 * first line it does not take (or at end, or at a line without "\n" before end) and returns its start.
 */
__attribute__((export_name("frames"))) u32 frames(u32 pos, u32 end) {
  for (;;) {
    if (pos >= end) return pos;
    u32 c0 = B(pos);
    if (c0 != 9 && c0 != 32) return pos;
    u32 nl = findNewline(pos + 1, end);
    if (nl >= end) return pos;
    u32 i = pos + 1;
    while (B(CLS + B(i)) == 1) i++;
    u32 pcStart = i;
    while (B(CLS + B(i)) == 2) i++;
    u32 pcEnd = i;
    while (B(CLS + B(i)) == 1) i++;
    if (pcEnd == pcStart || i == nl) return pos;
    int e = lookupIn(i, nl);
    if (e < 0 || W(e + R_MODE) != 0) return pos;
    u32 n = W(e + R_N);
    u32 len = W(ST_CURLEN);
    if (len + n > (u32)W(ST_CURCAP)) return pos;
    u32 cur = W(ST_CUR) + (len << 2);
    for (u32 k = 0; k < n; k++) W(cur + (k << 2)) = W(e + R_IDS + (k << 2));
    W(ST_CURLEN) = len + n;
    W(ST_PREV) = e;
    pos = nl + 1;
  }
}

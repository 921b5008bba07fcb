/*
 * Folded output of counted stacks as WebAssembly: sorts the distinct stacks by the byte order of their texts and
 * writes their "t0;t1;...;tn count\n" lines into an output window, a window at a time. See
 * src/flame/collapse/stack-lines.ts for the memory layout and the contract of each export. Compiled by
 * scripts/collapse-wasm.mjs (clang --target=wasm32 -O2) into stack-lines-wasm.ts; no libc, no globals, no stack:
 * every address is a constant or a value read from the state block at address 64.
 *
 * Tokens are interned names; no name contains ";" (the caller checks). A token is printed as "name;" when more
 * tokens follow and as "name" at the end, so texts compare as the sequences of these keys: two different keys
 * differ within their common length, or the shorter one is "name" (the text that ends sorts first). The keys are
 * ranked once by their bytes, and the stacks are then sorted by their sequences of ranks (a multikey quicksort).
 */
typedef unsigned int u32;
typedef unsigned long long u64;

#define W(a) (*(int *)(unsigned long)(a))
#define U(a) (*(u32 *)(unsigned long)(a))
#define B(a) (*(unsigned char *)(unsigned long)(a))
#define F(a) (*(double *)(unsigned long)(a))

/* State block (byte addresses). */
#define S_NAMES 64   /* number of names N */
#define S_STACKS 68  /* number of stacks S */
#define S_NB 72      /* name bytes */
#define S_NO 76      /* name offsets, N + 1 int32 (name i is bytes [NO[i], NO[i + 1]) of NB) */
#define S_AR 80      /* token arena, int32: name ids, replaced by rank + 1 of each token's key by prepare() */
#define S_OF 84      /* per stack: first token's index in the arena */
#define S_LE 88      /* per stack: number of tokens (at least 1) */
#define S_CN 92      /* per stack: count, f64 (an integer below 2^53) */
#define S_KEYS 96    /* 2N int32: key indexes (2 * name + 1 when followed by ";") in rank order */
#define S_TMP 100    /* 2N int32 (merge sort) */
#define S_ORDER 104  /* S int32: stacks in output order */
#define S_WORK 108   /* 3 * (S / 2 + 2) int32: the sort's pending ranges */
#define S_PB 112     /* (longest stack + 1) int32: bytes of the previous line's first k tokens */
#define S_OUT 116    /* output window */
#define S_OUTCAP 120 /* its size in bytes */
#define S_R 124      /* next position in ORDER to write */
#define S_POS 128    /* bytes in the window */
#define S_FROM 132   /* start of the bytes not yet written out */
#define S_PREV 136   /* start of the previous line in the window, -1 before the first */
#define S_PREVE 140  /* the previous line's stack */
#define S_PREVC 144  /* bytes of the previous line's text (without " count\n") */

#define SEMI 0x3b

static inline u64 ld64(u32 a) {
  u64 v;
  __builtin_memcpy(&v, (const void *)(unsigned long)a, 8);
  return v;
}
#define MAX_SAFE 9007199254740991.0

/* Byte order of keys a and b (see the file comment); 0 only when a == b. */
static int cmpKey(u32 a, u32 b) {
  u32 no = U(S_NO), nb = U(S_NB);
  u32 xa = U(no + ((a >> 1) << 2)), la = U(no + ((a >> 1) << 2) + 4) - xa;
  u32 xb = U(no + ((b >> 1) << 2)), lb = U(no + ((b >> 1) << 2) + 4) - xb;
  u32 m = la < lb ? la : lb;
  u32 i = 0;
  for (; i + 8 <= m; i += 8) {
    u64 x = ld64(nb + xa + i), y = ld64(nb + xb + i);
    if (x != y) {
      /* the first differing byte decides: compare as big-endian */
      x = __builtin_bswap64(x);
      y = __builtin_bswap64(y);
      return x < y ? -1 : 1;
    }
  }
  for (; i < m; i++) {
    int ca = B(nb + xa + i), cb = B(nb + xb + i);
    if (ca != cb) return ca - cb;
  }
  int ca = m < la ? B(nb + xa + m) : ((a & 1) ? SEMI : -1);
  int cb = m < lb ? B(nb + xb + m) : ((b & 1) ? SEMI : -1);
  if (ca != cb) return ca - cb;
  return (int)a - (int)b;
}

/*
 * Ranks the 2N keys by their bytes (bottom-up merge sort into KEYS), then replaces each token of the arena by
 * 1 + the rank of its key. Uses RANK = TMP after the sort. Returns 0.
 */
__attribute__((export_name("prepare"))) int prepare(void) {
  u32 n2 = U(S_NAMES) * 2;
  u32 keys = U(S_KEYS), tmp = U(S_TMP);
  for (u32 i = 0; i < n2; i++) U(keys + (i << 2)) = i;
  u32 src = keys, dst = tmp;
  for (u32 width = 1; width < n2; width <<= 1) {
    for (u32 lo = 0; lo < n2; lo += width << 1) {
      u32 mid = lo + width < n2 ? lo + width : n2;
      u32 hi = mid + width < n2 ? mid + width : n2;
      u32 i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        u32 x = U(src + (i << 2)), y = U(src + (j << 2));
        if (cmpKey(x, y) <= 0) {
          U(dst + (k++ << 2)) = x;
          i++;
        } else {
          U(dst + (k++ << 2)) = y;
          j++;
        }
      }
      while (i < mid) U(dst + (k++ << 2)) = U(src + (i++ << 2));
      while (j < hi) U(dst + (k++ << 2)) = U(src + (j++ << 2));
    }
    u32 t = src;
    src = dst;
    dst = t;
  }
  if (src != keys)
    for (u32 i = 0; i < n2; i++) U(keys + (i << 2)) = U(src + (i << 2));
  /* rank of each key, in TMP */
  for (u32 r = 0; r < n2; r++) U(tmp + (U(keys + (r << 2)) << 2)) = r;
  u32 s = U(S_STACKS), ar = U(S_AR), of = U(S_OF), le = U(S_LE);
  for (u32 e = 0; e < s; e++) {
    u32 o = ar + (U(of + (e << 2)) << 2);
    u32 n = U(le + (e << 2));
    for (u32 i = 0; i + 1 < n; i++) U(o + (i << 2)) = U(tmp + (((U(o + (i << 2)) << 1) + 1) << 2)) + 1;
    U(o + ((n - 1) << 2)) = U(tmp + ((U(o + ((n - 1) << 2)) << 1) << 2)) + 1;
  }
  return 0;
}

/* Replaces each int32 name id in [from, to) by idOf[id] (another table's ids as this one's; idOf at `idof`). */
__attribute__((export_name("remap"))) void remap(u32 from, u32 to, u32 idof) {
  for (u32 a = from; a < to; a += 4) U(a) = U(idof + (U(a) << 2));
}

/* Key of stack e at depth d: its token's rank + 1, 0 past its end. */
static inline __attribute__((always_inline)) u32 key(u32 e, u32 d) {
  u32 n = U(U(S_LE) + (e << 2));
  return d < n ? U(U(S_AR) + ((U(U(S_OF) + (e << 2)) + d) << 2)) : 0;
}

/* Order of stacks a and b from depth d on (their first d keys are equal). */
static int cmpFrom(u32 a, u32 b, u32 d) {
  u32 na = U(U(S_LE) + (a << 2)), nb = U(U(S_LE) + (b << 2));
  u32 pa = U(S_AR) + (U(U(S_OF) + (a << 2)) << 2), pb = U(S_AR) + (U(U(S_OF) + (b << 2)) << 2);
  for (;; d++) {
    u32 ka = d < na ? U(pa + (d << 2)) : 0, kb = d < nb ? U(pb + (d << 2)) : 0;
    if (ka != kb) return ka < kb ? -1 : 1;
    if (ka == 0) return 0;
  }
}

#define ORD(i) U(ord + ((i) << 2))

/* Fills ORDER with the stacks in output order (a multikey quicksort on the keys, pending ranges in WORK). */
__attribute__((export_name("sort"))) void sort(void) {
  u32 s = U(S_STACKS), ord = U(S_ORDER), work = U(S_WORK);
  for (u32 i = 0; i < s; i++) ORD(i) = i;
  u32 top = 0;
  U(work) = 0;
  U(work + 4) = s;
  U(work + 8) = 0;
  top = 3;
  while (top) {
    top -= 3;
    u32 lo = U(work + (top << 2)), hi = U(work + ((top + 1) << 2)), d = U(work + ((top + 2) << 2));
    for (;;) {
      if (hi - lo < 12) {
        for (u32 i = lo + 1; i < hi; i++) {
          u32 v = ORD(i), j = i;
          while (j > lo && cmpFrom(ORD(j - 1), v, d) > 0) {
            ORD(j) = ORD(j - 1);
            j--;
          }
          ORD(j) = v;
        }
        break;
      }
      /* pivot: median of three keys */
      u32 ka = key(ORD(lo), d), kb = key(ORD(lo + ((hi - lo) >> 1)), d), kc = key(ORD(hi - 1), d);
      u32 v = ka < kb ? (kb < kc ? kb : (ka < kc ? kc : ka)) : (ka < kc ? ka : (kb < kc ? kc : kb));
      u32 lt = lo, i = lo, gt = hi;
      while (i < gt) {
        u32 x = ORD(i), k = key(x, d);
        if (k < v) {
          ORD(i) = ORD(lt);
          ORD(lt) = x;
          lt++;
          i++;
        } else if (k > v) {
          gt--;
          ORD(i) = ORD(gt);
          ORD(gt) = x;
        } else {
          i++;
        }
      }
      if (lt - lo > 1) {
        U(work + (top << 2)) = lo;
        U(work + ((top + 1) << 2)) = lt;
        U(work + ((top + 2) << 2)) = d;
        top += 3;
      }
      if (hi - gt > 1) {
        U(work + (top << 2)) = gt;
        U(work + ((top + 1) << 2)) = hi;
        U(work + ((top + 2) << 2)) = d;
        top += 3;
      }
      if (v == 0 || gt - lt < 2) break; /* identical stacks, or nothing left to order */
      lo = lt;
      hi = gt;
      d++;
    }
  }
}

/* Whether stacks a and b are the same token sequence. */
static int sameStack(u32 a, u32 b) {
  u32 n = U(U(S_LE) + (a << 2));
  if (U(U(S_LE) + (b << 2)) != n) return 0;
  return cmpFrom(a, b, 0) == 0;
}

/* Copies n bytes forward, 8 at a time (the areas do not overlap, or `to` is below `from`). */
static inline __attribute__((always_inline)) void copy(u32 to, u32 from, u32 n) {
  u32 i = 0;
  for (; i + 8 <= n; i += 8) {
    u64 v;
    __builtin_memcpy(&v, (const void *)(unsigned long)(from + i), 8);
    __builtin_memcpy((void *)(unsigned long)(to + i), &v, 8);
  }
  for (; i < n; i++) B(to + i) = B(from + i);
}

/*
 * Writes the lines of ORDER[R...] into the window from POS on, stacks equal to the one before them (adjacent after
 * the sort) summed into one line. Returns 1 when the window is full (write out [FROM, POS) and call again: the
 * previous line is first moved to the window's start), 0 when all lines are written (write out [FROM, POS)), -1
 * when a sum reaches 2^53 (the caller must sum exactly) and -2 when one line does not fit the window.
 */
__attribute__((export_name("lines"))) int lines(void) {
  u32 s = U(S_STACKS), ord = U(S_ORDER), out = U(S_OUT), cap = U(S_OUTCAP);
  u32 ar = U(S_AR), of = U(S_OF), le = U(S_LE), cn = U(S_CN), pbs = U(S_PB), keys = U(S_KEYS);
  u32 no = U(S_NO), nb = U(S_NB);
  u32 r = U(S_R), pos = U(S_POS);
  int prev = W(S_PREV);
  u32 preve = U(S_PREVE);
  if (prev > 0) {
    /* the window was written out: keep the previous line at its start, for the next one's shared prefix */
    copy(out, out + (u32)prev, pos - (u32)prev);
    pos -= (u32)prev;
    prev = 0;
  }
  U(S_FROM) = pos;
  while (r < s) {
    u32 e = ORD(r);
    double count = F(cn + (e << 3));
    u32 next = r + 1;
    while (next < s && sameStack(e, ORD(next))) {
      count += F(cn + (ORD(next) << 3));
      next++;
    }
    if (count > MAX_SAFE) return -1;
    u32 n = U(le + (e << 2));
    u32 o = ar + (U(of + (e << 2)) << 2);
    u32 c = 0;
    if (prev >= 0) {
      u32 pn = U(le + (preve << 2));
      u32 po = ar + (U(of + (preve << 2)) << 2);
      u32 m = n < pn ? n : pn;
      while (c < m && U(o + (c << 2)) == U(po + (c << 2))) c++;
    }
    u64 v = (u64)count;
    u32 nd = 1;
    for (u64 t = v; t >= 10; t /= 10) nd++;
    u32 need = (c ? U(pbs + (c << 2)) : 0) + nd + 2;
    for (u32 k = c; k < n; k++) {
      u32 id = U(keys + ((U(o + (k << 2)) - 1) << 2)) >> 1;
      need += (k ? 1 : 0) + U(no + ((id + 1) << 2)) - U(no + (id << 2));
    }
    if (pos + need > cap) {
      U(S_R) = r;
      U(S_POS) = pos;
      W(S_PREV) = prev;
      U(S_PREVE) = preve;
      /* nothing written since the window was last written out, and the previous line already at its start */
      if (pos == U(S_FROM) && prev <= 0) return -2;
      return 1;
    }
    u32 start = pos;
    if (c) {
      u32 pb = U(pbs + (c << 2));
      copy(out + pos, out + (u32)prev, pb);
      pos += pb;
    }
    for (u32 k = c; k < n; k++) {
      if (k) B(out + pos++) = SEMI;
      u32 id = U(keys + ((U(o + (k << 2)) - 1) << 2)) >> 1;
      u32 from = nb + U(no + (id << 2)), len = U(no + ((id + 1) << 2)) - U(no + (id << 2));
      copy(out + pos, from, len);
      pos += len;
      U(pbs + ((k + 1) << 2)) = pos - start;
    }
    B(out + pos++) = ' ';
    for (u32 k = nd; k; k--) {
      B(out + pos + k - 1) = (unsigned char)('0' + v % 10);
      v /= 10;
    }
    pos += nd;
    B(out + pos++) = '\n';
    prev = (int)start;
    preve = e;
    r = next;
  }
  U(S_R) = r;
  U(S_POS) = pos;
  W(S_PREV) = prev;
  U(S_PREVE) = preve;
  return 0;
}

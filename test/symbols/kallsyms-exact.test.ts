/**
 * Exactness of Kallsyms resolution against a reference written here from the rules in kallsyms.ts's module comment
 * (a plain per-line parse, a sort of bigint addresses, the alias choice spelled out), on synthetic texts and on this
 * machine's /proc/kallsyms: every symbol's start, the bytes around it and the middle of each gap. The expected values
 * never come from the code under test. Also the deflated name blocks (packednames.ts) on their own.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type KernelSymbol, Kallsyms } from '../../src/symbols/kallsyms.js';
import { NAMES_PER_BLOCK, PackedNames } from '../../src/symbols/packednames.js';

interface RefSym {
  addr: bigint;
  name: string;
  module: string | undefined;
}

/** Rank for alias choice: global (upper case) 2, weak (w W v V) 1, local 0. */
function rank(type: string): number {
  if ('wWvV'.includes(type)) return 1;
  return type >= 'A' && type <= 'Z' ? 2 : 0;
}

/**
 * The code symbols of a kallsyms text, one per address, sorted: lines `ADDR TYPE NAME[\t[MODULE]]`, data types
 * (b B d D r R) and address 0 dropped; among aliases global > weak > local, then fewer leading `_`, then the longer
 * name in bytes, then the earlier line.
 */
function reference(text: Buffer): RefSym[] {
  const lines = text.toString('latin1').split('\n');
  const all: { addr: bigint; type: string; raw: string; module: string | undefined; line: number }[] = [];
  lines.forEach((l, line) => {
    const m = /^([0-9a-f]+) (.) ([^\t \n]*)(?:\t\[([^\]]*)\])?$/.exec(l);
    if (!m) return;
    const addr = BigInt(`0x${m[1]}`);
    if (addr === 0n || 'bBdDrR'.includes(m[2]!)) return;
    all.push({ addr, type: m[2]!, raw: m[3]!, module: m[4], line });
  });
  all.sort((a, b) => (a.addr < b.addr ? -1 : a.addr > b.addr ? 1 : a.line - b.line));
  const under = (s: string): number => /^_*/.exec(s)![0].length;
  const out: RefSym[] = [];
  let best: (typeof all)[number] | undefined;
  const flush = (): void => {
    if (best) {
      const name = Buffer.from(best.raw, 'latin1').toString('utf8');
      out.push({ addr: best.addr, name, module: best.module });
    }
  };
  for (const e of all) {
    if (best && e.addr === best.addr) {
      const better =
        rank(e.type) !== rank(best.type)
          ? rank(e.type) > rank(best.type)
          : under(e.raw) !== under(best.raw)
            ? under(e.raw) < under(best.raw)
            : e.raw.length > best.raw.length; // latin1: one char per byte; a tie keeps the earlier line
      if (better) best = e;
      continue;
    }
    flush();
    best = e;
  }
  flush();
  return out;
}

/** What resolve(addr) must return: the last symbol at or below addr. */
function expected(ref: RefSym[], addr: bigint): KernelSymbol | undefined {
  let a = 0;
  let b = ref.length;
  while (a < b) {
    const m = (a + b) >>> 1;
    if (ref[m]!.addr <= addr) a = m + 1;
    else b = m;
  }
  if (a === 0) return undefined;
  const s = ref[a - 1]!;
  const r: KernelSymbol = { name: s.name, offset: Number(addr - s.addr), start: s.addr };
  if (s.module !== undefined) r.module = s.module;
  return r;
}

/** Addresses to check: each start, one byte before and after, the middle of each gap, and the extremes. */
function probes(ref: RefSym[]): bigint[] {
  const out = [0n, 1n, 0xffffffffffffffffn];
  for (let i = 0; i < ref.length; i++) {
    const s = ref[i]!.addr;
    out.push(s, s - 1n, s + 1n);
    if (i + 1 < ref.length) out.push((s + ref[i + 1]!.addr) / 2n);
  }
  return out;
}

/** Resolve every address with `ks` and compare with the reference; returns how many were checked. */
function check(ks: Kallsyms, ref: RefSym[], addrs: bigint[]): number {
  const bad: string[] = [];
  for (const a of addrs) {
    const got = ks.resolve(a);
    const want = expected(ref, a);
    const same =
      got === want ||
      (got !== undefined &&
        want !== undefined &&
        got.name === want.name &&
        got.offset === want.offset &&
        got.start === want.start &&
        got.module === want.module &&
        Object.keys(got).length === Object.keys(want).length);
    if (!same && bad.length < 5) bad.push(`${a.toString(16)}: got ${JSON.stringify(show(got))}, want ${show(want)}`);
  }
  assert.deepEqual(bad, []);
  return addrs.length;
}

function show(s: KernelSymbol | undefined): string {
  return s ? JSON.stringify({ ...s, start: s.start.toString(16) }) : 'undefined';
}

let seed = 0x2545f491;
/** xorshift32, so that a failure is the same on every run. */
function rand(n: number): number {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) % n;
}

function shuffle<T>(xs: T[]): T[] {
  const a = xs.slice();
  for (let i = a.length - 1; i > 0; i--) {
    const j = rand(i + 1);
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/**
 * A kallsyms text of `n` lines: three high halves, aliases (ties on rank, underscores and length included), data
 * and zero-address lines, names from 1 to 600 bytes with UTF-8 and invalid bytes, modules; sorted by address or not.
 */
function synthetic(n: number, sorted: boolean): Buffer {
  const his = [0xfffffe00, 0xffffff00, 0xffffffff];
  const types = 'TTTTtttWwvVAabBdDrR';
  const mods = ['ext4', 'xfs', 'bpf', '__builtin__ftrace', 'nf_tables'];
  const pieces = ['do_', 'sys_', 'x64_', 'bpf_', 'ü', '€', 'a', 'b', 'z9', '\xff', 'long_piece_of_name_'];
  const lines: { hi: number; lo: number; text: Buffer }[] = [];
  let hi = his[0]!;
  let lo = 0x1000;
  for (let i = 0; i < n; i++) {
    if (rand(50) === 0) hi = his[rand(his.length)]!;
    if (rand(4) !== 0) lo = (lo + 1 + rand(rand(8) === 0 ? 0x100000 : 0x200)) >>> 0; // else an alias
    const zero = rand(200) === 0;
    let name = '_'.repeat(rand(8) === 0 ? rand(4) : 0);
    const len = rand(40) === 0 ? 300 + rand(300) : 1 + rand(30);
    while (Buffer.byteLength(name) < len) name += pieces[rand(pieces.length)]!;
    const mod = rand(3) === 0 ? mods[rand(mods.length)] : undefined;
    const hex = zero ? '0'.repeat(16) : hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
    const line = `${hex} ${types[rand(types.length)]} ${name}${mod ? `\t[${mod}]` : ''}`;
    // '\xff' stands for the byte 0xff (invalid UTF-8); the rest is UTF-8.
    const parts = line.split('\xff').map((p) => Buffer.from(p, 'utf8'));
    const bytes: Buffer[] = [];
    parts.forEach((p, k) => {
      if (k > 0) bytes.push(Buffer.from([0xff]));
      bytes.push(p);
    });
    lines.push({ hi, lo, text: Buffer.concat(bytes) });
  }
  if (sorted) lines.sort((a, b) => a.hi - b.hi || a.lo - b.lo);
  const ordered = sorted ? lines : shuffle(lines);
  return Buffer.concat(ordered.flatMap((l) => [l.text, Buffer.from('\n')]));
}

describe('Kallsyms resolution, exact against a reference parse', () => {
  for (const sorted of [true, false]) {
    it(`synthetic text (${sorted ? 'in address order' : 'shuffled'}, three high halves, aliases, modules)`, () => {
      const text = synthetic(8000, sorted);
      const ref = reference(text);
      assert.ok(ref.length > 3000, `${ref.length} code symbols`);
      const addrs = probes(ref);
      check(Kallsyms.fromBuffer(text), ref, addrs);
      // A fresh table resolving in random order: each name from another block than the last.
      check(Kallsyms.fromBuffer(text), ref, shuffle(addrs));
    });
  }

  it('a table with one code symbol, and one with none', () => {
    const one = Buffer.from('ffffffff81000000 D data\nffffffff81000010 t only\t[m]\n');
    check(Kallsyms.fromBuffer(one), reference(one), [0n, 0xffffffff81000010n, 0xffffffff81000011n, 2n ** 64n - 1n]);
    const none = Buffer.from('ffffffff81000000 D data\n0000000000000000 T hidden\n');
    assert.equal(reference(none).length, 0);
    check(Kallsyms.fromBuffer(none), [], [0n, 0xffffffff81000000n]);
  });

  const live = readFileSync('/proc/kallsyms');
  const hidden = !/^0*[1-9a-f][0-9a-f]* /m.test(live.toString('latin1'));
  it(
    "this machine's /proc/kallsyms (a copy read once), through fromBuffer and load",
    { skip: hidden && 'kallsyms addresses are hidden (not root / kptr_restrict)' },
    () => {
      const ref = reference(live);
      assert.ok(ref.length > 1000);
      const addrs = probes(ref);
      check(Kallsyms.fromBuffer(live), ref, addrs);
      const dir = mkdtempSync(join(tmpdir(), 'bpfscope-kallsyms-'));
      try {
        const path = join(dir, 'kallsyms');
        writeFileSync(path, live);
        const ks = Kallsyms.load(path);
        assert.equal(ks.codeSymbols, ref.length);
        check(ks, ref, shuffle(addrs));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});

describe('PackedNames (deflated name blocks)', () => {
  /** Names as one buffer with their byte ranges, as Kallsyms passes them. */
  function pack(names: Buffer[]): PackedNames {
    const start = new Uint32Array(names.length);
    const end = new Uint32Array(names.length);
    let o = 0;
    names.forEach((b, j) => {
      start[j] = o + 1; // a byte between names that must not be taken
      end[j] = o + 1 + b.length;
      o = end[j]!;
    });
    const src = Buffer.alloc(o + 1, 0x7c);
    names.forEach((b, j) => b.copy(src, start[j]!));
    return PackedNames.build(src, start, end);
  }

  for (const n of [0, 1, NAMES_PER_BLOCK - 1, NAMES_PER_BLOCK, NAMES_PER_BLOCK + 1, 5 * NAMES_PER_BLOCK + 7]) {
    it(`gives back ${n} names byte for byte, in any order`, () => {
      const names: Buffer[] = [];
      for (let j = 0; j < n; j++) {
        const len = j % 17 === 3 ? 0 : j % 29 === 5 ? 512 : rand(40);
        const b = Buffer.alloc(len);
        for (let i = 0; i < len; i++) b[i] = 32 + rand(224) === 10 ? 11 : 32 + rand(224);
        if (len > 2 && j % 13 === 0) b[1] = 0xff; // invalid UTF-8
        names.push(b);
      }
      const p = pack(names);
      assert.equal(p.count, n);
      for (const j of shuffle([...names.keys()])) assert.equal(p.get(j), names[j]!.toString('utf8'), `name ${j}`);
      for (let j = 0; j < n; j++) assert.equal(p.get(j), names[j]!.toString('utf8'), `name ${j} (in order)`);
    });
  }

  it('refuses a name containing the separator byte', () => {
    assert.throws(() => pack([Buffer.from('a'), Buffer.from('b\nc')]), /contains/);
  });
});

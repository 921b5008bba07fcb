/**
 * Micro-benchmark of symbolization (not a test; run with `npx tsx test/symbols/bench.ts`). Symbolizes addresses in
 * this Node process (the node binary's text and libc's) and in the kernel, uncached (first sight of each address) and
 * cached (repeats), and times loading kallsyms and the ELF symbol tables.
 */
import { ElfFile } from '../../src/symbols/elf.js';
import { Kallsyms } from '../../src/symbols/kallsyms.js';
import { readMaps } from '../../src/symbols/procmaps.js';
import { SymbolResolver } from '../../src/symbols/resolver.js';

function time<T>(label: string, n: number, fn: () => T): T {
  const t0 = process.hrtime.bigint();
  const r = fn();
  const ns = Number(process.hrtime.bigint() - t0);
  const per =
    n > 1 ? `  ${((n / ns) * 1e9).toFixed(0).padStart(10)} /s  ${(ns / n).toFixed(0).padStart(6)} ns each` : '';
  console.log(`${label.padEnd(48)} ${(ns / 1e6).toFixed(1).padStart(8)} ms${per}`);
  return r;
}

let seed = 0x9e3779b9;
/** xorshift32: deterministic addresses from run to run. */
function rand(): number {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 2 ** 32;
}

const ks = time('kallsyms: read + parse /proc/kallsyms', 1, () => Kallsyms.load());
console.log(`  ${ks.size} entries, ${ks.codeSymbols} code addresses`);
const text0 = ks.lookup('_text')!;
const etext = ks.lookup('_etext')!;
const span = Number(etext - text0);
const N = 200_000;
const kaddrs = Array.from({ length: N }, () => text0 + BigInt(Math.floor(rand() * span)));
time('kallsyms: resolve (no cache)', N, () => {
  for (const a of kaddrs) ks.resolve(a);
});
const r = new SymbolResolver({ kallsyms: ks });
time('resolver.kernel: first sight (uncached)', N, () => {
  for (const a of kaddrs) r.kernel(a);
});
time('resolver.kernel: repeats (cached)', N, () => {
  for (const a of kaddrs) r.kernel(a);
});

const maps = readMaps('self', { execOnly: true })!;
const targets = maps.filter((m) => m.kind === 'file' && (m.path === process.execPath || /\/libc\.so/.test(m.path)));
for (const path of new Set(targets.map((m) => m.path))) {
  const e = ElfFile.open(path);
  const syms = time(`ELF symbols of ${path}`, 1, () => e.symbols());
  console.log(`  ${syms.count} symbols, ${syms.codeCount} code addresses, .symtab: ${e.hasSymtab()}`);
  e.close();
}
const uaddrs: number[] = [];
for (let i = 0; i < N; i++) {
  const m = targets[i % targets.length]!;
  uaddrs.push(m.start + Math.floor(rand() * (m.end - m.start)));
}
const u = new SymbolResolver();
time('resolver.user: first process lookup (maps + ELF)', 1, () => u.user(process.pid, uaddrs[0]!));
time('resolver.user: first sight (uncached)', N, () => {
  for (const a of uaddrs) u.user(process.pid, a);
});
time('resolver.user: repeats (cached)', N, () => {
  for (const a of uaddrs) u.user(process.pid, a);
});
const big = uaddrs.map((a) => BigInt(a));
time('resolver.user: repeats (cached, bigint input)', N, () => {
  for (const a of big) u.user(process.pid, a);
});
const known = uaddrs.filter((a) => u.user(process.pid, a).name !== undefined).length;
console.log(`  ${known}/${N} user addresses named; stats ${JSON.stringify(u.stats)}`);

// A profile-like workload: 5000 distinct frames, 200k lookups, as stack bytes.
const few = kaddrs.slice(0, 5000);
const kbytes = Buffer.alloc(8 * N);
for (let i = 0; i < N; i++) kbytes.writeBigUInt64LE(few[Math.floor(rand() * few.length)]!, i * 8);
const rk = new SymbolResolver({ kallsyms: ks });
time('kernelStackFromBytes: 5k distinct, first pass', N, () => rk.kernelStackFromBytes(kbytes));
time('kernelStackFromBytes: 5k distinct, cached', N, () => rk.kernelStackFromBytes(kbytes));
const ufew = uaddrs.filter((a) => u.user(process.pid, a).name !== undefined).slice(0, 5000);
const ubytes = Buffer.alloc(8 * N);
for (let i = 0; i < N; i++) ubytes.writeBigUInt64LE(BigInt(ufew[Math.floor(rand() * ufew.length)]!), i * 8);
const ru = new SymbolResolver();
time('userStackFromBytes: 5k distinct, first pass', N, () => ru.userStackFromBytes(process.pid, ubytes));
time('userStackFromBytes: 5k distinct, cached', N, () => ru.userStackFromBytes(process.pid, ubytes));

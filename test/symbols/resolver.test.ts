import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { demanglerStatus, loadDemangler } from '../../src/symbols/demangle.js';
import { ElfFile } from '../../src/symbols/elf.js';
import { Kallsyms } from '../../src/symbols/kallsyms.js';
import { findMapping, readMaps } from '../../src/symbols/procmaps.js';
import { bccName, type Frame, foldedName, formatStack, frameText, SymbolResolver } from '../../src/symbols/resolver.js';
import { vdsoSymbols } from '../../src/symbols/vdso.js';
import { type Built, build, haveCxx, noCompiler, type Running, run } from './helpers.js';

const demangling = await loadDemangler();

describe('SymbolResolver on live processes', { skip: noCompiler }, () => {
  let b: Built;
  let p: Running;
  const r = new SymbolResolver();
  before(async () => {
    b = build();
    p = await run(b.prog);
  });
  after(async () => {
    await p?.stop();
    b?.cleanup();
  });

  it('resolves functions of a PIE executable (global and static) with offsets', () => {
    const alpha = p.addrs.get('alpha_func')!;
    assert.deepEqual(r.user(p.pid, alpha), {
      addr: alpha,
      name: 'alpha_func',
      offset: 0,
      module: b.prog,
      kernel: false,
      source: 'elf',
    });
    const plus5 = r.user(p.pid, p.addrs.get('alpha_func_plus5')!);
    assert.equal(plus5.name, 'alpha_func');
    assert.equal(plus5.offset, 5);
    assert.equal(r.user(p.pid, p.addrs.get('beta_static')!).name, 'beta_static');
    // Numbers work as well as bigints.
    assert.equal(r.user(p.pid, Number(alpha) + 1).offset, 1);
  });

  it('resolves functions of a shared library, demangling C++ names', () => {
    const lib = r.user(p.pid, p.addrs.get('lib_func')!);
    assert.equal(lib.name, 'lib_func');
    assert.equal(lib.offset, 0);
    assert.equal(lib.module, b.lib);
    if (!haveCxx) return;
    const m = r.user(p.pid, p.addrs.get('cxx_method')! + 2n);
    assert.equal(m.name, demangling ? 'bpfscope::Widget::compute(int)' : '_ZN8bpfscope6Widget7computeEi');
    assert.equal(m.offset, 2);
    const raw = new SymbolResolver({ demangle: false }).user(p.pid, p.addrs.get('cxx_method')!);
    assert.equal(raw.name, '_ZN8bpfscope6Widget7computeEi');
  });

  it('sees a library dlopen()ed later, at a load bias with a non-zero p_vaddr', async () => {
    const added = await p.command(`dlopen ${b.biasLib}`, 'loaded');
    const fn = added.get('bias_func')!;
    const other = added.get('bias_other')!;
    assert.ok(fn > 0n, 'dlopen failed');
    // The library links at 0x20000000 but that address was taken: the loader moved it.
    const elf = ElfFile.open(b.biasLib);
    const linked = elf.symbols().find('bias_func')[0]!.value;
    elf.close();
    assert.ok(linked >= 0x20000000);
    assert.notEqual(fn, BigInt(linked));
    const m = findMapping(readMaps(p.pid)!, Number(fn))!;
    assert.equal(m.path, b.biasLib);
    // The resolver read the maps before the dlopen: the miss makes it read them again.
    assert.deepEqual(
      [
        r.user(p.pid, fn).name,
        r.user(p.pid, fn).offset,
        r.user(p.pid, other + 3n).name,
        r.user(p.pid, other + 3n).offset,
      ],
      ['bias_func', 0, 'bias_other', 3],
    );
  });

  it('resolves the vDSO', () => {
    const syms = vdsoSymbols();
    assert.ok(syms, 'vdso readable');
    const name = ['__vdso_clock_gettime', '__kernel_clock_gettime'].find((n) => syms.find(n).length > 0)!;
    assert.ok(name, 'clock_gettime in the vdso');
    const vdso = readMaps(p.pid)!.find((m) => m.kind === 'vdso')!;
    const sym = syms.find(name)[0]!;
    // The vDSO image is mapped from its start with file offset 0, and its PT_LOAD maps offset 0 at its p_vaddr.
    const load = syms.loads[0]!;
    const addr = BigInt(vdso.start + sym.value - load.vaddr + load.offset + 1);
    assert.deepEqual(r.user(p.pid, addr), {
      addr,
      name,
      offset: 1,
      module: '[vdso]',
      kernel: false,
      source: 'vdso',
    });
  });

  it('resolves JIT code from /tmp/perf-PID.map, re-reading it as it grows', () => {
    const path = `/tmp/perf-${p.pid}.map`;
    const rr = new SymbolResolver({ unknownRetryMs: 0 });
    try {
      writeFileSync(path, '10000 40 JS:*hot file:///app.js:3:10\n');
      assert.deepEqual(rr.user(p.pid, 0x10008), {
        addr: 0x10008n,
        name: 'JS:*hot file:///app.js:3:10',
        offset: 8,
        module: path,
        kernel: false,
        source: 'perf-map',
      });
      assert.equal(rr.user(p.pid, 0x20000).name, undefined);
      writeFileSync(path, '10000 40 JS:*hot file:///app.js:3:10\n20000 10 JS:~later file:///app.js:9:1\n');
      assert.equal(rr.user(p.pid, 0x20000).name, 'JS:~later file:///app.js:9:1');
      // ELF symbols still come first for file-backed code.
      assert.equal(rr.user(p.pid, p.addrs.get('alpha_func')!).source, 'elf');
    } finally {
      rmSync(path, { force: true });
    }
  });

  it('leaves addresses nothing knows unknown, with the mapping when there is one', () => {
    const heapish = r.user(p.pid, 0x10);
    assert.deepEqual(heapish, { addr: 0x10n, name: undefined, offset: 0, kernel: false, source: 'none' });
    // Past the last function of the executable's text mapping: in a mapping, but no symbol.
    const text = readMaps(p.pid)!.find((m) => m.path === b.prog && m.exec)!;
    const end = r.user(p.pid, text.end - 1);
    assert.equal(end.name, undefined);
    assert.equal(end.module, b.prog);
  });

  it('caches per address and shares ELF tables between processes of the same binary', async () => {
    const rr = new SymbolResolver();
    const alpha = p.addrs.get('alpha_func')!;
    rr.user(p.pid, alpha);
    const after1 = { ...rr.stats };
    rr.user(p.pid, alpha);
    assert.equal(rr.stats.hits, after1.hits + 1);
    assert.equal(rr.stats.misses, after1.misses);
    const loads = rr.stats.elfLoads;
    assert.equal(loads, 1);
    const q = await run(b.prog);
    try {
      const f = rr.user(q.pid, q.addrs.get('alpha_func')!);
      assert.equal(f.name, 'alpha_func');
      assert.equal(rr.stats.elfLoads, loads, 'same file, no second parse');
      rr.user(q.pid, q.addrs.get('lib_func')!);
      assert.equal(rr.stats.elfLoads, loads + 1);
    } finally {
      await q.stop();
    }
  });

  it('still resolves a prepared process after it exited', async () => {
    const rr = new SymbolResolver({ mapsTtlMs: 0 });
    const q = await run(b.prog);
    const alpha = q.addrs.get('alpha_func')!;
    const lib = q.addrs.get('lib_func')!;
    assert.ok(rr.prepare(q.pid) >= 3); // prog, libdemo, libc, ld.so, vdso
    await q.stop();
    assert.equal(existsSync(`/proc/${q.pid}/maps`), false);
    assert.equal(rr.user(q.pid, alpha).name, 'alpha_func');
    assert.equal(rr.user(q.pid, lib).name, 'lib_func');
    rr.forget(q.pid);
    assert.equal(rr.user(q.pid, alpha).name, undefined);
  });

  it('resolves a stripped executable through its .gnu_debuglink, and not without the debug file', async () => {
    const s = await run(b.stripped);
    try {
      const f = new SymbolResolver().user(s.pid, s.addrs.get('alpha_func_plus5')!);
      assert.deepEqual([f.name, f.offset, f.module], ['alpha_func', 5, b.stripped]);
    } finally {
      await s.stop();
    }
    const lonely = join(b.dir, 'lonely');
    mkdirSync(lonely);
    copyFileSync(b.stripped, join(lonely, 'prog-stripped'));
    const { chmodSync } = await import('node:fs');
    chmodSync(join(lonely, 'prog-stripped'), 0o755);
    const t = await run(join(lonely, 'prog-stripped'));
    try {
      const f = new SymbolResolver({ debugDir: join(b.dir, 'none') }).user(t.pid, t.addrs.get('alpha_func')!);
      assert.notEqual(f.name, 'alpha_func');
      assert.equal(f.module, join(lonely, 'prog-stripped'));
    } finally {
      await t.stop();
    }
  });

  it('formats user stacks as bpftrace does (bpftrace, perf and raw modes)', () => {
    const alpha5 = p.addrs.get('alpha_func_plus5')!;
    const lib = p.addrs.get('lib_func')!;
    const stack = [alpha5, lib, 0x10n, 0n, 0x99n];
    const h = (a: bigint) => a.toString(16);
    assert.equal(r.formatUserStack(p.pid, stack), '\n        alpha_func+5\n        lib_func+0\n        0x10\n');
    assert.equal(
      r.formatUserStack(p.pid, stack, 'perf'),
      `\n\t${h(alpha5)} alpha_func+5 (${b.prog})\n\t${h(lib)} lib_func+0 (${b.lib})\n\t10 0x10 ([unknown])\n`,
    );
    assert.equal(r.formatUserStack(p.pid, stack, 'raw'), `\n${h(alpha5)}\n${h(lib)}\n10\n`);
    assert.equal(
      r.formatUserStack(p.pid, [alpha5, 0xffffffffffffffffn, lib], 'bpftrace', 4),
      '\n    alpha_func+5\n    <unwind failure>\n',
    );
    const bytes = Buffer.alloc(8 * stack.length);
    stack.forEach((a, i) => bytes.writeBigUInt64LE(a, i * 8));
    assert.deepEqual(r.userStackFromBytes(p.pid, bytes), r.userStack(p.pid, stack));
    assert.deepEqual(
      r.userStack(p.pid, stack).map((f) => foldedName(f)),
      ['alpha_func', 'lib_func', '[unknown]'],
    );
    assert.deepEqual(
      r.userStack(p.pid, stack).map((f) => bccName(f, { showModule: true, showOffset: true })),
      ['alpha_func+0x5 [prog]', 'lib_func+0x0 [libdemo.so]', '[unknown]'],
    );
  });
});

describe('SymbolResolver with Node --perf-basic-prof', { skip: noCompiler }, () => {
  let child: ChildProcess | undefined;
  after(() => child?.kill('SIGKILL'));

  it('names JIT-compiled JavaScript functions from the perf map Node writes', async () => {
    const script =
      'function hotFunctionXyz(n){let s=0;for(let i=0;i<n;i++)s+=i%7;return s}' +
      'for(let k=0;k<300;k++)hotFunctionXyz(1e5);process.stdout.write("ready\\n");process.stdin.resume();';
    child = spawn(process.execPath, ['--perf-basic-prof', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      child!.stdout!.once('data', () => resolve());
      child!.once('exit', () => reject(new Error('node exited')));
    });
    const pid = child.pid!;
    const path = `/tmp/perf-${pid}.map`;
    try {
      const lines = readFileSync(path, 'utf8').split('\n');
      // The last entry for the function wins (optimized code replaces baseline code).
      const entries = lines.filter((l) => / JS:[*~^]?hotFunctionXyz /.test(l));
      assert.ok(entries.length > 0, 'node wrote entries for hotFunctionXyz');
      const [start, , ...name] = entries[entries.length - 1]!.split(' ');
      const addr = BigInt(`0x${start}`) + 2n;
      const f = new SymbolResolver().user(pid, addr);
      assert.equal(f.name, name.join(' '));
      assert.equal(f.offset, 2);
      assert.equal(f.source, 'perf-map');
      assert.equal(foldedName(f, true), `${name.join(' ')}_[j]`);
    } finally {
      child.kill('SIGKILL');
      rmSync(path, { force: true });
    }
  });
});

describe('SymbolResolver kernel frames', () => {
  const ks = Kallsyms.fromBuffer(
    'ffffffff81000000 T _text\nffffffff81000100 T do_nanosleep\nffffffff81000200 t tail\nffffffffc0001000 t ext4_x\t[ext4]\n',
  );
  const r = new SymbolResolver({ kallsyms: ks });

  it('resolves through kallsyms and caches', () => {
    assert.deepEqual(r.kernel(0xffffffff81000104n), {
      addr: 0xffffffff81000104n,
      name: 'do_nanosleep',
      offset: 4,
      kernel: true,
      source: 'kallsyms',
    });
    assert.equal(r.kernel(0xffffffffc0001002n).module, 'ext4');
    assert.equal(r.kernel(0x10n).name, undefined);
    const before = r.stats.hits;
    r.kernel(0xffffffff81000104n);
    assert.equal(r.stats.hits, before + 1);
  });

  it('formats kernel stacks in bpftrace, perf and raw modes, and for folded/bcc output', () => {
    const st = [0xffffffff81000104n, 0xffffffffc0001002n, 0x10n];
    assert.equal(r.formatKernelStack(st), '\n        do_nanosleep+4\n        ext4_x+2\n        0x10\n');
    assert.equal(
      r.formatKernelStack(st, 'perf'),
      '\n\tffffffff81000104 do_nanosleep+4\n\tffffffffc0001002 ext4_x+2\n\t10 0x10\n',
    );
    assert.equal(r.formatKernelStack(st, 'raw'), '\nffffffff81000104\nffffffffc0001002\n10\n');
    const frames = r.kernelStack(st);
    assert.deepEqual(
      frames.map((f) => foldedName(f, true)),
      ['do_nanosleep_[k]', 'ext4_x_[k]', '[unknown]_[k]'],
    );
    assert.deepEqual(
      frames.map((f) => bccName(f, { showModule: true, showOffset: true })),
      ['do_nanosleep+0x4 [kernel]', 'ext4_x+0x2 [ext4]', '[unknown]'],
    );
    assert.equal(formatStack([]), '\n');
  });

  it('reads stacks straight from u64 little-endian bytes, stopping at 0 and at the unwind-failure marker', () => {
    const buf = Buffer.alloc(8 * 5);
    buf.writeBigUInt64LE(0xffffffff81000104n, 0);
    buf.writeBigUInt64LE(0xffffffffc0001002n, 8);
    buf.writeBigUInt64LE(0n, 16);
    buf.writeBigUInt64LE(0xffffffff81000000n, 24);
    assert.deepEqual(r.kernelStackFromBytes(buf), r.kernelStack([0xffffffff81000104n, 0xffffffffc0001002n]));
    assert.deepEqual(r.kernelStackFromBytes(buf, 1), r.kernelStack([0xffffffff81000104n]));
    buf.writeBigUInt64LE(0xffffffffffffffffn, 16);
    const withFailure = r.kernelStackFromBytes(buf);
    assert.equal(withFailure.length, 3);
    assert.equal(formatStack(withFailure), '\n        do_nanosleep+4\n        ext4_x+2\n        <unwind failure>\n');
    // A fresh address goes through the miss path with its bigint made from the halves.
    const fresh = new SymbolResolver({ kallsyms: ks }).kernelStackFromBytes(buf.subarray(0, 8));
    assert.deepEqual(fresh, [
      { addr: 0xffffffff81000104n, name: 'do_nanosleep', offset: 4, kernel: true, source: 'kallsyms' },
    ]);
  });

  it(
    'uses /proc/kallsyms by default',
    {
      skip: !readFileSync('/proc/kallsyms', 'latin1').includes(' do_nanosleep\n'),
    },
    () => {
      const line = readFileSync('/proc/kallsyms', 'latin1')
        .split('\n')
        .find((l) => l.endsWith(' do_nanosleep'))!;
      const addr = BigInt(`0x${line.split(' ')[0]}`);
      if (addr === 0n) return; // hidden addresses
      const f = new SymbolResolver().kernel(addr + 9n);
      assert.equal(frameText(f), 'do_nanosleep+9');
    },
  );
});

describe('frame text', () => {
  const user: Frame = { addr: 0x401000n, name: 'main', offset: 16, module: '/bin/x', kernel: false, source: 'elf' };
  const unknownUser: Frame = { addr: 0x7f00n, name: undefined, offset: 0, kernel: false, source: 'none' };
  it('matches bpftrace 0.26 for known and unknown frames', () => {
    assert.equal(frameText(user), 'main+16');
    assert.equal(frameText(user, 'perf'), 'main+16 (/bin/x)');
    assert.equal(frameText(user, 'raw'), '401000');
    assert.equal(frameText(unknownUser), '0x7f00');
    assert.equal(frameText(unknownUser, 'perf'), '0x7f00 ([unknown])');
  });
  it('knows whether the demangler is loaded', () => {
    assert.equal(demanglerStatus().loaded, demangling);
  });
});

/**
 * bpftrace (the installed 0.17, symbolizing through bcc) as the oracle: a probe on the test program's nanosleep prints
 * its kernel and user stacks in bpftrace and perf modes; we symbolize the same addresses and must print the same
 * bytes. Needs root, bpftrace and a compiler; skipped otherwise.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadDemangler } from '../../src/symbols/demangle.js';
import { SymbolResolver } from '../../src/symbols/resolver.js';
import { haveCxx, noCompiler } from './helpers.js';

function hasBpftrace(): boolean {
  try {
    execFileSync('bpftrace', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const skip =
  noCompiler ??
  (!haveCxx ? 'needs c++' : undefined) ??
  (process.getuid?.() !== 0 ? 'needs root' : undefined) ??
  (hasBpftrace() ? undefined : 'needs bpftrace');

const LIB = `#include <unistd.h>
namespace bpfscope { struct Widget { static int compute(int x); };
__attribute__((noinline)) int Widget::compute(int x) { usleep(20000); return x + 1; } }
extern "C" __attribute__((noinline)) int lib_func(int x) { return bpfscope::Widget::compute(x) + 1; }
`;
const PROG = `#include <stdio.h>
int lib_func(int);
__attribute__((noinline)) int alpha_func(int x) { return lib_func(x) * 2; }
int main(void) { int s = 0; for (int i = 0; i < 1000; i++) s += alpha_func(i); printf("%d\\n", s); return 0; }
`;

describe('stacks compared with bpftrace', { skip }, () => {
  it('prints kstack/ustack in bpftrace and perf modes byte for byte like bpftrace', async () => {
    await loadDemangler();
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-oracle-'));
    try {
      writeFileSync(join(dir, 'lib.cpp'), LIB);
      writeFileSync(join(dir, 'prog.c'), PROG);
      const fp = ['-O1', '-fno-omit-frame-pointer'];
      execFileSync('c++', ['-shared', '-fPIC', ...fp, '-o', 'libdemo.so', 'lib.cpp'], { cwd: dir });
      execFileSync('cc', [...fp, '-o', 'prog', 'prog.c', '-L.', '-ldemo', `-Wl,-rpath,${dir}`], { cwd: dir });
      const prog = spawn(join(dir, 'prog'), [], { stdio: 'ignore' });
      try {
        const pid = prog.pid!;
        const script =
          `tracepoint:syscalls:sys_enter_clock_nanosleep /pid == ${pid}/ ` +
          '{ printf("%s|%s|%s|%s", kstack(perf), kstack, ustack(perf), ustack); exit(); }';
        const out = execFileSync('bpftrace', ['-e', script], {
          encoding: 'utf8',
          timeout: 30000,
          stdio: ['ignore', 'pipe', 'ignore'],
        });
        const body = out.slice(out.indexOf('\n') + 1); // after "Attaching 1 probe..."
        const [kperf, kbt, uperf, ubt] = body.split('|');
        const addrs = (s: string) =>
          s
            .split('\n')
            .filter((l) => l.startsWith('\t'))
            .map((l) => BigInt(`0x${l.slice(1, l.indexOf(' '))}`));
        const k = addrs(kperf!);
        const u = addrs(uperf!);
        assert.ok(k.length > 0 && u.length >= 3, body);
        const r = new SymbolResolver();
        assert.equal(r.formatKernelStack(k, 'perf'), kperf);
        assert.equal(r.formatKernelStack(k), kbt);
        assert.equal(r.formatUserStack(pid, u, 'perf'), uperf);
        // bpftrace prints blank lines of its own when it exits after the last stack.
        assert.equal(r.formatUserStack(pid, u), ubt!.replace(/\n+$/, '\n'));
        assert.match(ubt!, /alpha_func\+\d+\n/);
      } finally {
        prog.kill('SIGKILL');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

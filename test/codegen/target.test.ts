/**
 * Host facts reach the analyser and the code generator only through the Target given to compile() (lang/target.ts):
 * a fake machine with 7 online CPUs, its own PID namespace, one kernel symbol and one cgroup compiles into code
 * that carries the fake's values, and a symbol the fake does not know is the analyser's error.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { disassembleIr } from '../../src/bpf/disasm.js';
import { compile } from '../../src/compiler.js';
import type { Target } from '../../src/lang/target.js';

/** A machine unlike this one: 7 online CPUs of 8, PID namespace dev 0x77 ino 0xabcdef, one symbol, one cgroup. */
function fakeTarget(asked: string[]): Target {
  return {
    onlineCpus: () => [0, 1, 2, 3, 4, 5, 6],
    possibleCpus: () => [0, 1, 2, 3, 4, 5, 6, 7],
    pidNamespace: () => ({ dev: 0x77n, ino: 0xabcdefn }),
    kernelSymbolAddress: (name) => {
      asked.push(`ksym ${name}`);
      return name === 'fake_sym' ? 0xffffffff81234567n : undefined;
    },
    cgroupId: (path) => {
      asked.push(`cgroup ${path}`);
      return path === '/fake/cgroup' ? 4242n : undefined;
    },
    resolveUaddr: (_probe, symbol) => `no uaddr for ${symbol} in the fake`,
  };
}

function disasm(text: string, target: Target): string {
  const r = compile({ name: 'stdin', text }, { target });
  return r.compiled.programs.map((p) => disassembleIr(p.fn.items).join('\n')).join('\n');
}

describe('compile() with a fake Target', () => {
  it('ncpus is the fake online CPU count', () => {
    const asked: string[] = [];
    assert.match(disasm('BEGIN { @ = ncpus; }', fakeTarget(asked)), /^ {2}v\d+ = 7$/m);
  });

  it('kaddr() and cgroupid() are the fake symbol address and cgroup id, asked of the target', () => {
    const asked: string[] = [];
    const code = disasm('BEGIN { @a = kaddr("fake_sym"); @b = cgroupid("/fake/cgroup"); }', fakeTarget(asked));
    assert.match(code, /^ {2}v\d+ = 0xffffffff81234567$/m);
    assert.match(code, /^ {2}v\d+ = 4242$/m);
    assert.ok(asked.includes('ksym fake_sym') && asked.includes('cgroup /fake/cgroup'), asked.join(', '));
  });

  it("pid reads the fake PID namespace's ids with bpf_get_ns_current_pid_tgid", () => {
    const code = disasm('BEGIN { @ = pid; }', fakeTarget([]));
    assert.match(code, /^ {2}v\d+ = 119\n {2}v\d+ = 11259375\n {2}r1 = v\d+\n {2}r2 = v\d+\n/m);
    assert.match(code, /call bpf_get_ns_current_pid_tgid#120/);
  });

  it('a symbol or cgroup the target does not know is a compile error', () => {
    assert.throws(() => disasm('BEGIN { @ = kaddr("not_in_fake"); }', fakeTarget([])), {
      message: /Failed to resolve kernel symbol: not_in_fake/,
    });
    assert.throws(() => disasm('BEGIN { @ = cgroupid("/not/in/fake"); }', fakeTarget([])), {
      message: /Failed to resolve cgroup ID for path: \/not\/in\/fake/,
    });
  });
});

/**
 * C++ names in the bpftrace language's user symbols, through the CLI bundle users run (live, as root): `ustack` and
 * `usym` print `demo::work(int)` for `_ZN4demo4workEi`, as bpftrace does (its `cpp_demangle` config, default on), and
 * the name as the file has it with `config = { cpp_demangle = 0 }`. The program runs twice in a row, so the second
 * run starts the bundle from the launcher's V8 code cache, where Node 20 gives a script no dynamic import(): the
 * demangler used to be loaded by one, and both the `-e` path (which never loaded it) and cached runs printed
 * mangled names. `func` is demangled too (its value is fixed at compile time, so its string type is the demangled
 * name's length), `probe` is not. Expected outputs were written from bpftrace 0.17's output for the same program and
 * binary.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { liveSkipReason, runBpfscope } from '../tools/helpers.js';

const SOURCE = `#include <unistd.h>
namespace demo { __attribute__((noinline)) int work(int x) { return x * 2 + 1; } }
int main() { volatile int s = 0; for (int i = 0; i < 3; i++) s += demo::work(i); sleep(1); return s == 9 ? 0 : 1; }
`;

function cxxSkipReason(): string | undefined {
  return spawnSync('c++', ['--version']).status === 0 ? undefined : 'needs a C++ compiler (c++)';
}

describe('C++ user symbols from the CLI (live)', () => {
  const skip = liveSkipReason() ?? cxxSkipReason();

  it('ustack, usym and func print demangled names on every run, mangled with cpp_demangle = 0', { skip }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-demangle-'));
    try {
      writeFileSync(join(dir, 'demo.cpp'), SOURCE);
      const bin = join(dir, 'demo');
      const cc = spawnSync('c++', ['-O1', '-g', '-o', bin, join(dir, 'demo.cpp')], { encoding: 'utf8' });
      assert.equal(cc.status, 0, cc.stderr);
      const body = `uprobe:${bin}:_ZN4demo4workEi { printf("%s|\\n", usym(reg("ip"))); print(ustack(1)); exit(); }`;
      for (const run of [1, 2]) {
        const r = await runBpfscope(['-e', body, '-c', bin], { timeoutMs: 60_000 });
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, 'demo::work(int)|\n\n        demo::work(int)+0\n\n\n\n', `run ${run}: ${r.stdout}`);
      }
      const raw = await runBpfscope(['-e', `config = { cpp_demangle = 0 } ${body}`, '-c', bin], { timeoutMs: 60_000 });
      assert.equal(raw.code, 0, raw.stderr);
      assert.equal(raw.stdout, '_ZN4demo4workEi|\n\n        _ZN4demo4workEi+0\n\n\n\n');

      // `func` is demangled (its string sized for the demangled name), `probe` keeps the symbol, by exact name and
      // by wildcard (one uprobe_multi link, `func` by attach cookie); bpftrace 0.17 printed the same lines for this
      // binary (`BPFTRACE_NO_CPP_DEMANGLE=1` for the mangled one, 0.17 having no config block)
      const probe = `uprobe:${bin}:_ZN4demo4workEi`;
      const fn = `{ printf("%s|%s|%d\\n", func, probe, sizeof(func)); exit(); }`;
      for (const [prog, want] of [
        [`uprobe:${bin}:_ZN4demo4workEi ${fn}`, `demo::work(int)|${probe}|16\n\n\n`],
        [`uprobe:${bin}:*work* ${fn}`, `demo::work(int)|${probe}|16\n\n\n`],
        [`config = { cpp_demangle = 0 } uprobe:${bin}:*work* ${fn}`, `_ZN4demo4workEi|${probe}|16\n\n\n`],
      ] as const) {
        const r = await runBpfscope(['-e', prog, '-c', bin], { timeoutMs: 60_000 });
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, want, prog);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

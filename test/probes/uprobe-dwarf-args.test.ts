/**
 * uprobe `args` from DWARF (src/probes/uprobe-args.ts): a noinline function of a program the test builds with
 * `gcc -g -O1`, called three times with known arguments. The integer arguments are compared with bpftrace 0.17
 * (`args->x`, its spelling) and with literals; what the hook leaves out (a double, a return probe, `fn+off`, a binary
 * without -g) must be an error, never a value.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  bpfscopeSkipReason,
  bpftraceSkipReason,
  describe as describeRun,
  runTool,
  stripOracleAttach,
} from '../helpers/cli.js';

const SRC = `
__attribute__((noinline)) long scale(int delta, unsigned char small, long big, const char *name, int *ptr,
                                     double ratio) {
  return delta * small + big + (name != 0) + (ptr != 0) + (long)ratio;
}
int main(int argc, char **argv) {
  int x = 5;
  long t = 0;
  for (int i = 0; i < 3; i++) t += scale(-7 + i, 200, -123456789012L, "hello", &x, 0.5);
  return (int)(t & 1) + (argv == 0) + (argc == 0);
}
`;

/** The three calls' integer arguments, from SRC. */
const EXPECTED = '-7 200 -123456789012\n-6 200 -123456789012\n-5 200 -123456789012\n';

const skip = process.arch !== 'x64' ? 'x86-64 only' : (bpfscopeSkipReason() ?? undefined);

describe('uprobe args from DWARF', { skip }, () => {
  let dir = '';
  let bin = '';
  let plain = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'bpfscope-uargs-'));
    writeFileSync(join(dir, 'w.c'), SRC);
    bin = join(dir, 'w');
    plain = join(dir, 'w-nodebug');
    execFileSync('gcc', ['-g', '-O1', '-o', bin, join(dir, 'w.c')]);
    execFileSync('gcc', ['-O1', '-o', plain, join(dir, 'w.c')]);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads integer arguments by name, as bpftrace 0.17 does', async () => {
    const prog = (a: string) =>
      `uprobe:${bin}:scale /pid == cpid/ { printf("%d %d %ld\\n", ${a}delta, ${a}small, ${a}big); }`;
    const ours = await runTool('bpfscope', ['-e', prog('args.'), '-c', bin]);
    assert.equal(ours.code, 0, describeRun(ours));
    assert.equal(ours.stdout.trim(), EXPECTED.trim(), describeRun(ours));
    if (bpftraceSkipReason()) return;
    const oracle = await runTool('bpftrace', ['-e', prog('args->'), '-c', bin]);
    assert.equal(oracle.code, 0, describeRun(oracle));
    assert.equal(stripOracleAttach(oracle.stdout).stdout.trim(), ours.stdout.trim());
  });

  it('prints args as a record with the pointers as addresses', async () => {
    const r = await runTool('bpfscope', ['-e', `uprobe:${bin}:scale /pid == cpid/ { print(args); }`, '-c', bin]);
    assert.equal(r.code, 0, describeRun(r));
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 3, describeRun(r));
    lines.forEach((l, i) =>
      assert.match(
        l,
        new RegExp(
          `^\\{ \\.delta = ${-7 + i}, \\.small = 200, \\.big = -123456789012, \\.name = 0x[0-9a-f]+, \\.ptr = 0x[0-9a-f]+ \\}$`,
        ),
      ),
    );
    const ptr = await runTool('bpfscope', [
      '-e',
      `uprobe:${bin}:scale /pid == cpid/ { printf("%d\\n", args.ptr == arg4 && args.name == arg3); }`,
      '-c',
      bin,
    ]);
    assert.equal(ptr.stdout.trim(), '1\n1\n1', describeRun(ptr));
  });

  for (const [what, program, message] of [
    [
      'a double parameter',
      (b: string) => `uprobe:${b}:scale { print(args.ratio); }`,
      /Can't find field 'ratio' in args of uprobe:.*:scale/,
    ],
    [
      'a uretprobe',
      (b: string) => `uretprobe:${b}:scale { print(args.delta); }`,
      /The args builtin can not be used with 'uretprobe' probes/,
    ],
    [
      'a probe inside the function',
      (b: string) => `uprobe:${b}:scale+4 { print(args.delta); }`,
      /The args builtin can not be used with 'uprobe' probes/,
    ],
  ] as const) {
    it(`refuses ${what}`, async () => {
      const r = await runTool('bpfscope', ['-e', program(bin)]);
      assert.notEqual(r.code, 0, describeRun(r));
      assert.match(r.stderr, message, describeRun(r));
    });
  }

  it('keeps args unavailable without debug information', async () => {
    const r = await runTool('bpfscope', ['-e', `uprobe:${plain}:scale { print(args.delta); }`]);
    assert.notEqual(r.code, 0, describeRun(r));
    assert.match(r.stderr, /The args builtin can not be used with 'uprobe' probes/, describeRun(r));
  });
});

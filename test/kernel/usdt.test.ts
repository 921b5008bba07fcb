/**
 * USDT probes on a test binary with a SystemTap SDT note (test/fixtures/usdt.c), built with -O1 (register
 * operands) and -O0 (memory operands), compared with bpftrace 0.17.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseUsdtArg } from '../../src/probes/usdt.js';
import { repoRoot, runTool } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'bpfscope-usdt-'));

function build(opt: string): string {
  const out = join(dir, `usdt${opt}`);
  execFileSync('cc', [opt, '-o', out, join(repoRoot(), 'test/fixtures/usdt.c')]);
  return out;
}

describe('usdt', () => {
  it('parses x86-64 operand specs', () => {
    assert.deepEqual(parseUsdtArg('-4@%edi'), { kind: 'reg', size: 4, signed: true, regOffset: 112 });
    assert.deepEqual(parseUsdtArg('8@-24(%rbp)'), { kind: 'mem', size: 8, signed: false, regOffset: 32, disp: -24 });
    assert.deepEqual(parseUsdtArg('4@$5'), { kind: 'const', size: 4, signed: false, value: 5n });
    // constants as gcc writes them for tests/testprogs/usdt_args.c (0xf7f6f5f4f3f2f1f0 cast to each type), read
    // as the values tests/runtime/usdt "usdt constant arguments" expects
    assert.deepEqual(parseUsdtArg('4@$-202182160'), { kind: 'const', size: 4, signed: false, value: 4092785136n });
    assert.deepEqual(parseUsdtArg('-4@$-202182160'), { kind: 'const', size: 4, signed: true, value: -202182160n });
    assert.deepEqual(parseUsdtArg('2@$-3600'), { kind: 'const', size: 2, signed: false, value: 61936n });
    assert.deepEqual(parseUsdtArg('1@$-16'), { kind: 'const', size: 1, signed: false, value: 240n });
    assert.deepEqual(parseUsdtArg('-1@$-16'), { kind: 'const', size: 1, signed: true, value: -16n });
    assert.deepEqual(parseUsdtArg('-1@$240'), { kind: 'const', size: 1, signed: true, value: -16n });
    assert.deepEqual(parseUsdtArg('8@$-579005069656919568'), {
      kind: 'const',
      size: 8,
      signed: false,
      value: -579005069656919568n,
    });
    assert.throws(() => parseUsdtArg('8@%xmm0'), /unsupported USDT argument/);
  });

  for (const opt of ['-O1', '-O0']) {
    it(`reads probe arguments (${opt}) like bpftrace 0.17`, async () => {
      const bin = build(opt);
      const prog = `usdt:${bin}:bpfs:tick { @[arg0, arg1] = sum(arg1 + 1); } usdt:${bin}:tick { @n = count(); }`;
      const ours = await runTool('bpfscope', ['-e', prog, '-c', `${bin} 3`]);
      assert.equal(ours.code, 0, ours.stderr);
      assert.equal(ours.stdout, '\n\n@[0, 0]: 1\n@[1, 10]: 11\n@[2, 20]: 21\n@n: 3\n');
      const oracle = await runTool('bpftrace', ['-e', prog, '-c', `${bin} 3`]);
      if (oracle.code === 0) assert.equal(ours.stdout, oracle.stdout.replace(/^Attaching.*\n/, ''));
    });
  }

  it('counts a probe with two locations once in "Attached N probes" and fires at both (tests/runtime/usdt "... different number of locations by wildcard")', async () => {
    // the fixture's PROBE2 macro with a main of its own: bpfs:tick at two places, bpfs:tock at one
    const macro = readFileSync(join(repoRoot(), 'test/fixtures/usdt.c'), 'utf8').split('int main')[0]!;
    const src = join(dir, 'usdt-locations.c');
    writeFileSync(
      src,
      `${macro}int main(int argc, char **argv) {\n  long n = argc;\n  PROBE2(bpfs, tick, n, 1);\n` +
        `  PROBE2(bpfs, tick, n, 2);\n  PROBE2(bpfs, tock, n, 3);\n  return 0;\n}\n`,
    );
    const bin = join(dir, 'usdt-locations');
    execFileSync('cc', ['-O1', '-o', bin, src]);
    const r = await runTool('bpfscope', ['-e', `usdt:${bin}:bpfs:t* { @[probe, arg1] = count(); }`, '-c', bin]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^Attached 2 probes$/m);
    assert.equal(
      r.stdout,
      `\n\n@[usdt:${bin}:bpfs:tick, 1]: 1\n@[usdt:${bin}:bpfs:tick, 2]: 1\n@[usdt:${bin}:bpfs:tock, 3]: 1\n`,
    );
  });

  it('lists the probes and reports a missing one', async () => {
    const bin = build('-O1');
    const l = await runTool('bpfscope', ['-l', `usdt:${bin}`]);
    assert.equal(l.stdout, `usdt:${bin}:bpfs:tick\n`);
    const r = await runTool('bpfscope', ['-e', `usdt:${bin}:bpfs:nope { }`]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /No USDT probes found/);
  });
});

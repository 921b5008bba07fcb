/**
 * The resource pass's frame bound (codegen/resources.ts, compiler.ts `resources`): for every unit of the golden
 * programs (test/codegen/golden) and the differential cases (test/diff/cases), the frame code generation then uses
 * is at most the bound, and a unit whose bound fits the 512-byte BPF stack is generated on the stack. The golden
 * programs all fit (their listings are byte-identical to those recorded before the pass existed); programs with
 * long strings get a frame map, decided before generation.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type CompileContext, COMPILE_PASSES } from '../../src/compiler.js';
import { repoRoot } from '../helpers/cli.js';

interface UnitFrame {
  name: string;
  bound: number;
  inMap: boolean;
  /** Bytes of frame the generated code uses (the frame map's value size when in a map). */
  used: number;
}

function frames(text: string, positional: string[] = [], configEnv?: Record<string, string>): UnitFrame[] {
  const ctx: CompileContext = {
    source: { name: 'stdin', text },
    opts: { positional, unsafe: true, cpid: 1, ...(configEnv ? { configEnv } : {}) },
    warnings: [],
  };
  COMPILE_PASSES.run(ctx);
  const maps = new Map(ctx.tables!.resources.frameMaps.map((f) => [f.name, f.size]));
  return ctx.programs!.map((p, i) => {
    const inMap = ctx.frames![i]!.inMap;
    const mapSize = maps.get(`${p.fn.name}_frame`.slice(0, 15));
    assert.equal(mapSize !== undefined, inMap, `${p.kernelName}: frame map as decided`);
    return { name: p.kernelName, bound: ctx.frames![i]!.bound, inMap, used: mapSize ?? p.fn.frameSize };
  });
}

const root = repoRoot();
const tracefs = existsSync('/sys/kernel/tracing/events/syscalls');

function programsIn(dir: string): { name: string; text: string }[] {
  return readdirSync(dir)
    .filter((n) => n.endsWith('.bt'))
    .sort()
    .map((n) => ({ name: n, text: readFileSync(join(dir, n), 'utf8') }));
}

describe('resource pass: frame bounds', () => {
  it('bounds every golden program within the stack, at or above the frame used', (t) => {
    if (!tracefs) return t.skip('no tracefs syscalls events');
    let units = 0;
    for (const { name, text } of programsIn(join(root, 'test', 'codegen', 'golden'))) {
      if (text.includes('{{WORKLOAD}}')) continue; // needs the workload's ELF (golden.test.ts)
      const pos = /^\/\/ @positional (.*)$/m.exec(text);
      for (const u of frames(text, pos ? pos[1]!.split(' ') : [])) {
        units++;
        assert.equal(u.inMap, false, `${name} ${u.name}: bound ${u.bound} moved it off the stack`);
        assert.ok(u.used <= u.bound, `${name} ${u.name}: uses ${u.used} bytes, bound ${u.bound}`);
      }
    }
    assert.ok(units >= 20, `only ${units} units`);
  });

  it('bounds every differential case at or above its frame, none moved off the stack', (t) => {
    if (!tracefs) return t.skip('no tracefs syscalls events');
    let units = 0;
    const skipped: string[] = [];
    for (const { name, text } of programsIn(join(root, 'test', 'diff', 'cases'))) {
      let fs: UnitFrame[];
      try {
        fs = frames(text);
      } catch (e) {
        // cases whose probes need a binary or a kernel feature this host lacks; never an internal error
        assert.doesNotMatch(String((e as Error).message), /internal/, name);
        skipped.push(name);
        continue;
      }
      for (const u of fs) {
        units++;
        assert.equal(u.inMap, false, `${name} ${u.name}: bound ${u.bound} moved it off the stack`);
        assert.ok(u.used <= u.bound, `${name} ${u.name}: uses ${u.used} bytes, bound ${u.bound}`);
      }
    }
    assert.ok(units >= 150, `only ${units} units (skipped: ${skipped.join(', ')})`);
  });

  it('puts long strings in a frame map up front, with room for the frame', () => {
    // bpftrace's runtime tests `call` str_big_tuple, str_big_read (e1b7c393) at max_strlen 9999
    const env = { BPFTRACE_MAX_STRLEN: '9999' };
    const cases = [
      'BEGIN { @s = str(0); @ss = @s; print("success!"); exit() }',
      'BEGIN { $s = str(0); printf("%s\\n", $s); print((1, (2, $s))); }',
    ];
    for (const text of cases) {
      for (const u of frames(text, [], env)) {
        assert.equal(u.inMap, true, `${text}: ${u.bound}`);
        assert.ok(u.used <= u.bound && u.used >= 9999, `${text}: uses ${u.used} bytes, bound ${u.bound}`);
      }
    }
  });

  it('keeps programs near the stack limit on the stack, bounded exactly or above', () => {
    // from bpftrace's runtime tests (e1b7c393): `other` "exit exits immediately", `call` "ntop static ip"; frames
    // used as generated before the resource pass existed
    const cases: [string, number][] = [
      ['interval:ms:100 { @++; if (@) { exit(); } @++ }', 48],
      ['BEGIN { @ = tseries(1, 1s, 5); exit(); }', 56],
      [
        'interval:ms:100 { printf("IP: %s, %s, %s, %s\\n", ntop(1), ntop(0x0100007f), ntop(0xffff0000), ntop(0x0000ffff)); exit() }',
        224,
      ],
    ];
    for (const [text, used] of cases) {
      const [u] = frames(text);
      assert.equal(u!.used, used, text);
      assert.equal(u!.inMap, false, text);
      assert.ok(u!.bound >= used && u!.bound <= 512, `${text}: bound ${u!.bound}`);
    }
  });
});

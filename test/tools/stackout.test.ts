/**
 * The stack tools' shared output options (src/tools/framework/stackout.ts): which combinations of -f, --svg,
 * --format and -o are accepted and what goes where; the exports of literal folded lines (pprof decoded with the
 * pprof-format package: sample types, values, function and location tables; speedscope validated against the schema
 * the speedscope package ships); and live runs: offwaketime --format pprof and speedscope on the pipe workload
 * (test/tools/fixtures/wakeprog.c), stackcount -f --svg counting the workload's write(2) calls (exactly N).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import { Profile } from 'pprof-format';
import { BpfscopeError } from '../../src/errors.js';
import { ToolWriter } from '../../src/tools/framework/output.js';
import { exportStacks, StackOutput } from '../../src/tools/framework/stackout.js';
import { liveSkipReason, startBpfscope, waitForLinks } from './helpers.js';
import { foldedLines, stackprogSkipReason } from './stackprog.js';
import { startWakeprog, within10 } from './wakeprog.js';

const schemaPath = createRequire(import.meta.url).resolve('speedscope/dist/release/file-format-schema.json');
const validate = new Ajv({ strict: false }).compile(JSON.parse(readFileSync(schemaPath, 'utf8')));

function decode(buf: Uint8Array): { types: string[]; samples: { frames: string[]; values: number[] }[]; p: Profile } {
  const p = Profile.decode(buf);
  const s = p.stringTable.strings;
  const fn = new Map(p.function.map((f) => [Number(f.id), s[Number(f.name)]!]));
  const loc = new Map(p.location.map((l) => [Number(l.id), fn.get(Number(l.line[0]!.functionId))!]));
  return {
    p,
    types: p.sampleType.map((t) => `${s[Number(t.type)]}/${s[Number(t.unit)]}`),
    // location ids are leaf first: reversed to root first, as folded lines are
    samples: p.sample.map((x) => ({
      frames: x.locationId.map((id) => loc.get(Number(id))!).reverse(),
      values: x.value.map(Number),
    })),
  };
}

/** The parts of a speedscope file the tests read. */
interface Speedscope {
  $schema: string;
  shared: { frames: { name: string }[] };
  profiles: { samples: number[][]; weights: number[]; unit: string; endValue: number }[];
}

describe('stack output options', () => {
  it('what goes to stdout, whether the header is printed, and the refusals', () => {
    const o = (a: Parameters<typeof StackOutput.from>[0]) => StackOutput.from(a, 'tool');
    const report = o({ folded: false });
    assert.deepEqual([report.text, report.header, report.file], ['report', true, null]);
    const f = o({ folded: true });
    assert.deepEqual([f.text, f.header, f.file], ['folded', false, null]);
    const svg = o({ folded: false, svg: 'x.svg' });
    assert.deepEqual([svg.text, svg.header, svg.file], ['none', true, { format: 'svg', path: 'x.svg' }]);
    assert.equal(o({ folded: true, svg: 'x.svg' }).text, 'folded');
    const toStdout = o({ folded: false, format: 'pprof' });
    assert.deepEqual([toStdout.text, toStdout.header, toStdout.file], ['none', false, { format: 'pprof', path: null }]);
    assert.equal(o({ folded: false, format: 'folded' }).text, 'folded');
    const toFile = o({ folded: false, format: 'speedscope', output: 'p.json' });
    assert.deepEqual([toFile.text, toFile.header], ['none', true]);
    assert.throws(
      () => o({ folded: false, output: 'x' }),
      /^BpfscopeError: tool: -o\/--output FILE goes with --format$/,
    );
    assert.throws(() => o({ folded: false, svg: 'a', format: 'svg' }), BpfscopeError);
    assert.throws(
      () => o({ folded: true, format: 'pprof' }),
      /tool: -f and --format pprof would both write to stdout: add -o FILE/,
    );
  });

  const lines = ['a;b;c 3', 'a;b 2', 'a;d 5'];
  const writer = new ToolWriter();

  it('pprof: sample types and values per kind, function/location tables, one mapping', () => {
    const off = decode(exportStacks('pprof', lines, { tool: 't', kind: 'offcpu', flame: {} }, writer));
    assert.deepEqual(off.types, ['offcpu/nanoseconds']);
    assert.deepEqual(off.samples, [
      { frames: ['a', 'b', 'c'], values: [3000] },
      { frames: ['a', 'b'], values: [2000] },
      { frames: ['a', 'd'], values: [5000] },
    ]);
    assert.equal(off.p.function.length, 4);
    assert.equal(off.p.location.length, 4);
    assert.equal(off.p.mapping.length, 1);
    const cpu = decode(exportStacks('pprof', lines, { tool: 't', kind: 'cpu', periodNs: 20408163, flame: {} }, writer));
    assert.deepEqual(cpu.types, ['samples/count', 'cpu/nanoseconds']);
    assert.deepEqual(cpu.samples[0]!.values, [3, 3 * 20408163]);
    assert.equal(Number(cpu.p.period), 20408163);
    const count = decode(exportStacks('pprof', lines, { tool: 't', kind: 'count', flame: {} }, writer));
    assert.deepEqual(count.types, ['events/count']);
    assert.deepEqual(
      count.samples.map((x) => x.values[0]),
      [3, 2, 5],
    );
  });

  it("speedscope: the schema's sampled profile, microseconds for off-CPU time", () => {
    const doc = JSON.parse(
      exportStacks('speedscope', lines, { tool: 't', kind: 'offcpu', flame: {} }, writer).toString(),
    ) as Speedscope;
    assert.ok(validate(doc), JSON.stringify(validate.errors));
    assert.equal(doc.$schema, 'https://www.speedscope.app/file-format-schema.json');
    assert.deepEqual(doc.shared.frames, [{ name: 'a' }, { name: 'b' }, { name: 'c' }, { name: 'd' }]);
    assert.deepEqual(doc.profiles[0]!.samples, [
      [0, 1, 2],
      [0, 1],
      [0, 3],
    ]);
    assert.deepEqual(doc.profiles[0]!.weights, [3, 2, 5]);
    assert.equal(doc.profiles[0]!.unit, 'microseconds');
    assert.equal(doc.profiles[0]!.endValue, 10);
  });
});

/** Run `bpfscope ARGS... -p PID` on a gated wakeprog: start it once the tool's probes are attached. */
async function runOn(wargs: string[], args: (pid: number) => string[], links: number) {
  const w = startWakeprog(wargs);
  try {
    const run = startBpfscope(args(w.pid), { timeoutMs: 90_000 });
    assert.ok(await waitForLinks(run.pid, links, 60_000), run.stderr());
    w.go();
    const blockedUs = await w.measured;
    run.child.kill('SIGINT');
    const r = await run.done;
    w.finish();
    assert.equal((await w.done).code, 0);
    assert.equal(r.code, 0, r.stderr);
    return { ...r, blockedUs };
  } finally {
    w.child.kill('SIGKILL');
  }
}

describe('stack output on the live kernel', () => {
  const skip = liveSkipReason() ?? stackprogSkipReason();

  it(
    'offwaketime --format pprof -o / speedscope -o: the reader blocked ~600 ms, woken by the writer',
    { skip },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'bpfscope-stackout-'));
      try {
        const pb = join(dir, 'p.pb');
        const r = await runOn(
          ['pipe', '2', '300000'],
          (pid) => ['offwaketime', '--format', 'pprof', '-o', pb, '-p', String(pid)],
          2,
        );
        assert.match(
          r.stdout,
          /^Tracing blocked time \(us\) by user \+ kernel off-CPU and waker stack\.\.\. Hit Ctrl-C to end\.\n\nWrote a pprof profile of \d+ stacks to .*p\.pb \(\d+ bytes\)\.\n$/,
        );
        const d = decode(readFileSync(pb));
        assert.deepEqual(d.types, ['offcpu/nanoseconds']);
        const mine = d.samples.filter(
          (x) =>
            x.frames[0] === 'bpfs_reader' && x.frames.includes('bpfs_read_wait') && x.frames.at(-1) === 'bpfs_writer',
        );
        assert.ok(mine.length >= 1, JSON.stringify(d.samples.map((x) => x.frames.join(';'))));
        const ns = mine.reduce((a, x) => a + x.values[0]!, 0);
        assert.ok(within10(ns / 1000, r.blockedUs), `${ns} ns; the reader measured ${r.blockedUs} us`);

        const ss = join(dir, 's.json');
        const r2 = await runOn(
          ['pipe', '2', '300000'],
          (pid) => ['offwaketime', '--format', 'speedscope', '-o', ss, '-p', String(pid)],
          2,
        );
        const doc = JSON.parse(readFileSync(ss, 'utf8')) as Speedscope;
        assert.ok(validate(doc), JSON.stringify(validate.errors));
        const names = doc.shared.frames.map((f) => f.name);
        const prof = doc.profiles[0]!;
        let us = 0;
        prof.samples.forEach((s, i) => {
          const fr = s.map((j) => names[j]);
          if (fr[0] === 'bpfs_reader' && fr.at(-1) === 'bpfs_writer') us += prof.weights[i]!;
        });
        assert.ok(within10(us, r2.blockedUs), `${us} us; the reader measured ${r2.blockedUs} us`);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('stackcount -f --svg: the 3 write(2) calls of the writer thread, one hot stack', { skip }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-stackout-'));
    try {
      const svg = join(dir, 'c.svg');
      const r = await runOn(
        ['pipe', '3', '20000'],
        (pid) => ['stackcount', '-f', '-P', '--svg', svg, '-p', String(pid), 't:syscalls:sys_enter_write'],
        1,
      );
      const mine = foldedLines(r.stdout).filter(([s]) => /^bpfs_writer;(.+;)?writer;bpfs_write_wake(;.*)?$/.test(s));
      assert.deepEqual(
        mine.map(([, n]) => n),
        [3],
        r.stdout,
      );
      const text = readFileSync(svg, 'utf8');
      assert.match(text, /<text id="title" [^>]*>Stack Count Flame Graph<\/text>/);
      assert.match(text, /<title>bpfs_write_wake \(3 events, [\d.]+%\)<\/title>/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * Shared parts of the stack tools (src/tools/stacktool.ts): argparse value types and mutually exclusive groups
 * against CPython's messages on bcc's parsers (fixture test/tools/fixtures/stack-tools-argparse.json), raw stack
 * parsing, dropping BPF frames, symbolization of map entries, bcc's folded and multi-line formats, the report order,
 * and flame graph writing.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { MapDump } from '../../src/runtime/output/model.js';
import { Kallsyms } from '../../src/symbols/kallsyms.js';
import { type Frame, SymbolResolver } from '../../src/symbols/resolver.js';
import { ArgError, type ParserSpec, parseArgs } from '../../src/tools/framework/argparse.js';
import { ToolWriter } from '../../src/tools/framework/output.js';
import {
  dropTracingFrames,
  exclusiveGroupError,
  foldedLine,
  parseRawStack,
  ProcessPreparer,
  type StackEntry,
  sortEntries,
  stackLines,
  symbolizeEntries,
  writeFlameGraph,
} from '../../src/tools/stacktool.js';
import { repoRoot } from '../helpers/cli.js';
import { OutputSink } from '../../src/runtime/output/sink.js';

interface Fixture {
  help: Record<string, string>;
  errors: { tool: string; argv: string[]; status: number; error: string }[];
}
const fixture = JSON.parse(
  readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', 'stack-tools-argparse.json'), 'utf8'),
) as Fixture;

async function toolModule(tool: string): Promise<{ SPEC: ParserSpec; GROUPS: string[][] }> {
  return (await import(`../../src/tools/${tool}.js`)) as { SPEC: ParserSpec; GROUPS: string[][] };
}

describe('options as bcc parses them', () => {
  for (const c of fixture.errors) {
    it(`${c.tool} ${c.argv.join(' ')}: ${c.error}`, async () => {
      const { SPEC, GROUPS } = await toolModule(c.tool);
      let err: ArgError | undefined;
      try {
        const parsed = parseArgs(SPEC, c.argv);
        err = exclusiveGroupError(SPEC, c.argv, parsed, GROUPS);
      } catch (e) {
        if (!(e instanceof ArgError)) throw e;
        err = e;
      }
      assert.ok(err, 'no error');
      assert.equal(err.text().trimEnd().split('\n').at(-1), c.error);
    });
  }

  it('values: lists, bigints for -M, defaults', async () => {
    const p = await toolModule('profile');
    const a = parseArgs(p.SPEC, ['-p', '185,186', '-F', '99', '5']);
    assert.deepEqual([a.pid, a.frequency, a.duration, a.cpu, a.hash_storage_size], [[185, 186], 99, 5, -1, 40960]);
    assert.equal(exclusiveGroupError(p.SPEC, ['-p', '185,186', '-F', '99', '5'], a, p.GROUPS), undefined);
    const o = await toolModule('offcputime');
    const b = parseArgs(o.SPEC, ['-t', '7', '-M', '18446744073709551615']);
    assert.deepEqual([b.pids, b.tgids, b.max_block_time, b.min_block_time], [[7], null, 18446744073709551615n, 1]);
  });
});

const K = (name: string | undefined, addr = 0xffffffff81000000n, module?: string): Frame =>
  module === undefined
    ? { addr, name, offset: 0x10, kernel: true, source: name ? 'kallsyms' : 'none' }
    : { addr, name, offset: 0x10, module, kernel: true, source: 'kallsyms' };
const U = (name: string | undefined, addr = 0x401000n, module = '/usr/bin/app'): Frame => ({
  addr,
  name,
  offset: 0x1a,
  module,
  kernel: false,
  source: name ? 'elf' : 'none',
});

describe('stacks', () => {
  it('parseRawStack: hex lines, innermost first; empty; unwind failure as u64 -1', () => {
    assert.deepEqual(parseRawStack('\nffffffff81000130\n7f00aa\n'), [0xffffffff81000130n, 0x7f00aan]);
    assert.deepEqual(parseRawStack(''), []);
    assert.deepEqual(parseRawStack('\n401000\n<unwind failure>\n'), [0x401000n, 0xffffffffffffffffn]);
  });

  it('dropTracingFrames removes the BPF program and bpf_trace_runN at the top only', () => {
    const frames = [
      K('bpf_prog_6deef7357e7b4530_sched_switch', 0xffffffffc0027149n, 'bpf'),
      K(undefined, 0xffffffffc0027000n, 'bpf'),
      K('bpf_trace_run4'),
      K('__schedule'),
      K('schedule'),
      K('bpf_trace_run4'),
    ];
    assert.deepEqual(
      dropTracingFrames(frames).map((f) => f.name),
      ['__schedule', 'schedule', 'bpf_trace_run4'],
    );
    const plain = [K('__schedule')];
    assert.equal(dropTracingFrames(plain), plain);
  });

  it('symbolizeEntries reads the key layout, symbolizes kernel frames and asks for the user stack pid', () => {
    const ks = Kallsyms.fromBuffer(
      'ffffffff81000000 T _text\nffffffff81000100 T do_nanosleep\nffffffff81000200 T __schedule\n',
    );
    const r = new SymbolResolver({ kallsyms: ks });
    const dump: MapDump = {
      name: '@',
      keyTypes: [],
      valueType: { kind: 'int', size: 8, signed: false } as never,
      entries: [
        {
          key: [
            { kind: 'string', value: '\nffffffff81000204\nffffffff81000108\n' },
            { kind: 'string', value: '\n10\n' },
            { kind: 'string', value: 'sleeper' },
            { kind: 'int', value: 41n, signed: false, size: 4 },
            { kind: 'int', value: 40n, signed: false, size: 4 },
          ],
          value: { kind: 'sum', value: 1234n, signed: false },
        },
      ],
    };
    const asked: number[] = [];
    const [e] = symbolizeEntries(dump, { kernel: 0, user: 1, comm: 2, id: 3 }, r, (key) => {
      const pid = Number((key[4] as { value: bigint }).value);
      asked.push(pid);
      return pid;
    });
    assert.deepEqual(asked, [40]);
    assert.equal(e!.comm, 'sleeper');
    assert.equal(e!.id, 41);
    assert.equal(e!.value, 1234n);
    assert.deepEqual(
      e!.kernel!.map((f) => [f.name, f.offset]),
      [
        ['__schedule', 4],
        ['do_nanosleep', 8],
      ],
    );
    assert.deepEqual(
      e!.user!.map((f) => [f.addr, f.name]),
      [[0x10n, undefined]],
    );
  });
});

describe("bcc's output formats", () => {
  const both: StackEntry = {
    comm: 'app',
    id: 42,
    kernel: [K('clear_user'), K('read_zero', 0xffffffff81000100n), K(undefined, 0xffffffff81000200n)],
    user: [U('leaf'), U('outer'), U(undefined, 0x1n, '/usr/bin/app')],
    value: 7n,
  };

  it('folded: comm, user frames outermost first, kernel frames outermost first, the value', () => {
    assert.equal(
      foldedLine(both, { delimiter: false, annotate: false }),
      'app;[unknown];outer;leaf;[unknown];read_zero;clear_user 7',
    );
    assert.equal(
      foldedLine(both, { delimiter: true, annotate: true }),
      'app;[unknown];outer;leaf;-;[unknown]_[k];read_zero_[k];clear_user_[k] 7',
    );
  });

  it('folded: no delimiter unless both stacks have frames; -U/-K entries have one part', () => {
    const userOnlySample = { ...both, kernel: [] };
    assert.equal(foldedLine(userOnlySample, { delimiter: true, annotate: true }), 'app;[unknown];outer;leaf 7');
    const { user: _u, ...kernelOnly } = both;
    assert.equal(foldedLine(kernelOnly, { delimiter: true, annotate: false }), 'app;[unknown];read_zero;clear_user 7');
    assert.equal(
      foldedLine({ comm: 'idle', id: 0, kernel: [], user: [], value: 3n }, { delimiter: false, annotate: false }),
      'idle 3',
    );
  });

  it('multi-line: kernel frames, "--" with -d, user frames, the "-  comm (id)" line, the value, a blank line', () => {
    const fmt = {
      delimiter: true,
      annotate: false,
      kernelLine: (f: Frame) => `${f.name ?? '[unknown]'}+k`,
      userLine: (f: Frame) => `${f.name ?? '[unknown]'}+u`,
    };
    assert.equal(
      stackLines(both, fmt),
      '    clear_user+k\n    read_zero+k\n    [unknown]+k\n    --\n    leaf+u\n    outer+u\n    [unknown]+u\n' +
        '    -                app (42)\n        7\n\n',
    );
    assert.equal(
      stackLines({ ...both, kernel: [] }, fmt),
      '    leaf+u\n    outer+u\n    [unknown]+u\n    -                app (42)\n        7\n\n',
    );
  });

  it('report order: ascending value, ties by folded text', () => {
    const e = (comm: string, value: bigint): StackEntry => ({ comm, id: 1, kernel: [], value });
    const sorted = sortEntries([e('b', 5n), e('c', 1n), e('a', 5n), e('d', 10n)], {
      delimiter: false,
      annotate: false,
    });
    assert.deepEqual(
      sorted.map((x) => `${x.comm}${x.value}`),
      ['c1', 'a5', 'b5', 'd10'],
    );
  });
});

describe('flame graph file', () => {
  it('writes the SVG of the folded lines with the given options; warnings go to stderr', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bpfscope-stacktool-'));
    const errs: string[] = [];
    class Capture extends OutputSink {
      override write(t: string): void {
        errs.push(t);
      }
    }
    const err = new Capture(-1, { bufferSize: 0 });
    const writer = new ToolWriter(new OutputSink(-1), err);
    try {
      const path = join(dir, 'out.svg');
      const n = writeFlameGraph(
        path,
        ['app;main;bpfs_hot 30', 'app;main;other 10'],
        { colors: 'io', countname: 'us', title: 'Off-CPU Time Flame Graph' },
        writer,
        'offcputime',
      );
      const svg = readFileSync(path, 'utf8');
      assert.equal(svg.length, n);
      assert.match(svg, /^<\?xml version="1\.0" standalone="no"\?>\n/);
      assert.match(svg, /<\/svg>\n$/);
      assert.match(svg, />Off-CPU Time Flame Graph</);
      assert.match(svg, /<title>bpfs_hot \(30 us, 75\.00%\)<\/title>/);
      assert.deepEqual(errs, []);
      writeFlameGraph(path, ['app;main 3'], {}, writer, 'profile');
      assert.deepEqual(errs, ['profile: flame graph: Stack count is low (3). Did something go wrong?\n']);
      assert.throws(
        () => writeFlameGraph(join(dir, 'no', 'such', 'dir.svg'), ['a 1'], {}, writer, 'profile'),
        /^BpfscopeError: profile: cannot write the flame graph to .*no\/such\/dir\.svg: ENOENT/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('ProcessPreparer', () => {
  it('reports each (pid, comm) once from the program; prepares processes from events between other work', async () => {
    assert.equal(
      ProcessPreparer.statement('  '),
      '  if (@__seen[pid, comm, curtask->group_leader->start_time] == 0) {\n    @__seen[pid, comm, curtask->group_leader->start_time] = 1;\n    printf("%d/%llu\\n", pid, curtask->group_leader->start_time);\n  }\n',
    );
    const r = new SymbolResolver({ demangle: false });
    const p = new ProcessPreparer(r);
    p.onEvent([String(process.pid)]);
    p.onEvent([String(process.pid)]);
    p.onEvent(['not a pid']);
    p.onEvent(['0']);
    assert.equal(p.pending, 1, 'queued once, not done in the event handler');
    assert.equal(r.stats.elfLoads, 0);
    while (p.pending > 0) await new Promise((res) => setImmediate(res));
    assert.equal(p.count, 1);
    assert.ok(r.stats.elfLoads > 0, 'the executable mappings of the process were loaded');
    // Reported again (exec): the maps are read again at once, not after the resolver's 1 s cache time.
    const reads = r.stats.mapsReads;
    p.onEvent([String(process.pid)]);
    while (p.pending > 0) await new Promise((res) => setImmediate(res));
    assert.equal(r.stats.mapsReads, reads + 1);
    p.stop();
    p.onEvent([String(process.ppid)]);
    assert.equal(p.pending, 0, 'nothing is queued after stop()');
  });
});

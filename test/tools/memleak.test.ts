/**
 * memleak (src/tools/memleak.ts): bcc's -h text and usage errors (CPython argparse on bcc's parser, in
 * test/tools/fixtures/bcc-help-bashreadline-memleak.json), the generated programs, the report's selection and
 * formats, and live runs on test/tools/fixtures/leakprog.c, which leaks 7 x 4000 bytes from bpfs_leak_malloc() and
 * 3 x 1000 bytes from bpfs_leak_calloc() and frees everything else it allocates.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseArgs } from '../../src/tools/framework/argparse.js';
import { compile } from '../../src/compiler.js';
import {
  ALLOCS_MAP,
  type Allocation,
  availableFunctions,
  buildProgram,
  combined,
  entryText,
  findObject,
  frameLine,
  type MemleakOptions,
  outstanding,
  reportHeader,
  SPEC,
  USER_FUNCTIONS,
} from '../../src/tools/memleak.js';
import type { MapDump } from '../../src/runtime/output/model.js';
import { argparseFixtureTests, loadArgparseFixture } from './argparse-fixture.js';
import { leakprogPath, leakprogSkipReason } from './leakprog.js';
import { liveSkipReason, removeScratch, runBpfscope, startBpfscope, tempDir } from './helpers.js';
import { Profile } from 'pprof-format';
import { runTool } from '../../src/tools/api.js';
import { memleakFolded } from '../../src/tools/memleak.js';
import { jsonLines } from './jsonrun.js';

const fixture = loadArgparseFixture('bcc-help-bashreadline-memleak');

describe('memleak options (bcc tools/memleak.py)', () => {
  argparseFixtureTests(SPEC, 'bcc-help-bashreadline-memleak', 4);

  it('parsed values equal argparse (defaults, -ap, positionals, sizes, -O, --sort)', () => {
    const cases = fixture.parsed.filter((p) => p.tool === 'memleak');
    assert.equal(cases.length, 2);
    for (const c of cases) assert.deepEqual(parseArgs(SPEC, c.argv), { help: false, ...c.args }, c.argv.join(' '));
  });

  it("bcc's own checks: an unknown --sort key, -z > -Z (stdout, exit 1)", async () => {
    const s = await runBpfscope(['memleak', '--sort', 'age']);
    assert.equal(s.code, 1);
    assert.equal(s.stdout, "Given sort_key: age\nSupporting sort key list: ['size', 'count']\n");
    const z = await runBpfscope(['memleak', '-z', '10', '-Z', '5']);
    assert.equal(z.code, 1);
    assert.equal(z.stdout, "min_size (-z) can't be greater than max_size (-Z)\n");
  });
});

const BASE: MemleakOptions = { trace: false, combinedOnly: false, waMissingFree: false, sampleRate: 1, percpu: false };

describe('memleak programs', () => {
  const user = { path: '/lib/libc.so.6', functions: USER_FUNCTIONS, command: false };

  it('user mode: entry keeps the size by (tid, function), return stores (size, nsecs, ustack) by address', () => {
    const p = buildProgram({ ...BASE, user });
    assert.match(p, /^config = \{ max_map_keys = 1000000 \}\n/);
    assert.match(
      p,
      /uprobe:\/lib\/libc\.so\.6:calloc \{\n {2}\$size = \(uint64\)\(arg0 \* arg1\);\n {2}@__sizes\[tid, 2\] = \$size;\n\}/,
    );
    assert.match(p, /uretprobe:\/lib\/libc\.so\.6:malloc \{\n {2}if \(has_key\(@__sizes, \(tid, 1\)\)\) \{/);
    assert.match(p, /@__allocs\[\$addr\] = \(\$size, nsecs, \$stack\);/);
    assert.match(p, /\$stack = ustack\(raw\);/);
    // realloc frees its pointer on entry; free and munmap have no return probe.
    assert.match(
      p,
      /uprobe:\/lib\/libc\.so\.6:realloc \{\n {2}\$free = \(uint64\)arg0;\n {2}if \(has_key\(@__allocs, \$free\)\) \{/,
    );
    assert.doesNotMatch(p, /uretprobe:[^ ]*:(free|munmap) /);
    // posix_memalign's address is read from *memptr in user memory.
    assert.match(p, /\$addr = \*uptr\(\(uint64 \*\)\$memptr\);/);
    assert.equal(p.match(/^uprobe:/gm)?.length, 11);
    assert.equal(p.match(/^uretprobe:/gm)?.length, 9);
    assert.doesNotMatch(p, /@__csize|cpid|alloc entered/);
    // Each new (pid, comm) is reported once, so that symbols are read while the process lives.
    assert.match(p, /if \(@__seen\[pid, comm, curtask->group_leader->start_time\] == 0\) \{/);
  });

  it('-z/-Z/-s filter on entry; --combined-only keeps per-stack sums; -t prints; -c filters on cpid', () => {
    const p = buildProgram({
      ...BASE,
      user: { ...user, command: true },
      minSize: 16,
      maxSize: 4096,
      sampleRate: 5,
      combinedOnly: true,
      trace: true,
    });
    assert.match(p, /if \(\$size >= 16 && \$size <= 4096 && nsecs % 5 == 0\) \{\n {4}@__sizes\[tid, 1\] = \$size;/);
    assert.match(p, /@__csize\[\$stack\] = sum\(\$size\);\n {6}@__ccount\[\$stack\] = sum\(1\);/);
    assert.match(p, /@__csize\[\$info\.2\] = sum\(-\$info\.0\);/);
    assert.match(p, /uprobe:\/lib\/libc\.so\.6:malloc \/pid == cpid\/ \{/);
    assert.match(p, /alloc entered, size = %u\\n", comm, tid, cpu, nsecs, \$size\)/);
    assert.match(p, /alloc exited, size = %lu, result = %lx\\n"/);
    assert.match(p, /free entered, address = %lx, size = %lu\\n"/);
  });

  it('kernel mode: kmem tracepoints with kstack, pages by pfn, _node variants when present; --percpu', () => {
    const k = buildProgram({ ...BASE, pageSize: 4096, nodeTracepoints: false, waMissingFree: true });
    for (const tp of ['kmalloc', 'kfree', 'kmem_cache_alloc', 'kmem_cache_free', 'mm_page_alloc', 'mm_page_free'])
      assert.match(k, new RegExp(`^tracepoint:kmem:${tp} \\{`, 'm'));
    assert.doesNotMatch(k, /_node/);
    assert.match(k, /\$size = \(uint64\)\(4096 << args\.order\);/);
    assert.match(k, /tracepoint:kmem:mm_page_free \{\n {2}\$free = \(uint64\)args\.pfn;/);
    assert.match(k, /\$stack = kstack\(raw\);/);
    // --wa-missing-free: kmalloc first forgets an older allocation at the same address.
    assert.match(k, /tracepoint:kmem:kmalloc \{\n {2}\$free = \(uint64\)args\.ptr;/);
    assert.match(buildProgram({ ...BASE, nodeTracepoints: true }), /tracepoint:kmem:kmalloc_node \{/);
    const pc = buildProgram({ ...BASE, percpu: true });
    assert.match(pc, /^tracepoint:percpu:percpu_alloc_percpu \{/m);
    assert.match(pc, /^tracepoint:percpu:percpu_free_percpu \{/m);
    assert.doesNotMatch(pc, /kmem:/);
  });

  it('@__allocs is planned as ALLOCS_MAP (the map created before compiling) in every mode', () => {
    const expected = { type: 1, keySize: 8, valueSize: 32, maxEntries: 1000000, name: 'AT___allocs' };
    assert.deepEqual(ALLOCS_MAP, expected);
    const libc = findObject('c', null)!;
    const u = { path: libc, functions: availableFunctions(libc), command: false };
    const variants: MemleakOptions[] = [
      { ...BASE, pageSize: 4096, nodeTracepoints: false },
      { ...BASE, pageSize: 4096, combinedOnly: true, trace: true, waMissingFree: true, minSize: 1, sampleRate: 3 },
      { ...BASE, percpu: true },
      { ...BASE, user: u },
      { ...BASE, user: { ...u, command: true }, combinedOnly: true, trace: true, maxSize: 100 },
    ];
    for (const o of variants) {
      const r = compile({ name: 'memleak', text: buildProgram(o) }, { cpid: 1 });
      const m = r.compiled.maps.find((x) => x.kernelName === expected.name);
      assert.ok(m, JSON.stringify(o));
      const spec = { type: m.mapType, keySize: m.keySize, valueSize: m.valueSize, maxEntries: m.maxEntries };
      assert.deepEqual({ ...spec, name: m.kernelName }, expected, JSON.stringify(o));
    }
  });

  it("-O NAME: the process's mapped libNAME.so first, then the linker cache; a path as is", () => {
    const dir = tempDir();
    try {
      mkdirSync(join(dir, '42'));
      writeFileSync(
        join(dir, '42', 'maps'),
        `7f00-7f01 r-xp 00000000 08:01 1 ${process.execPath}\n7f02-7f03 r-xp 00000000 08:01 2 /nonexistent/libc.so.6\n`,
      );
      const cached = findObject('c', null);
      assert.match(cached ?? '', /libc\.so/);
      // A mapped library that no longer exists is skipped.
      assert.equal(findObject('c', 42, dir), cached);
      writeFileSync(join(dir, '42', 'maps'), `7f00-7f01 r-xp 00000000 08:01 1 ${join(dir, 'libfoo-2.1.so')}\n`);
      writeFileSync(join(dir, 'libfoo-2.1.so'), '');
      assert.equal(findObject('foo', 42, dir), join(dir, 'libfoo-2.1.so'));
      assert.equal(findObject('/nonexistent/x.so', null), undefined);
    } finally {
      removeScratch(dir);
    }
  });
});

function alloc(address: bigint, size: bigint, ts: bigint, stack: bigint[]): Allocation {
  return { address, size, timestampNs: ts, stack, stackKey: stack.map((a) => a.toString(16)).join('\n') };
}

describe('memleak report', () => {
  const A = [0x10n, 0x20n];
  const B = [0x30n];

  it('outstanding(): age filter, stackless allocations skipped, groups by stack, -a lines by size, top N', () => {
    const allocs = [
      alloc(0x948cd0n, 16n, 100n, A),
      alloc(0x948cf0n, 16n, 200n, A),
      alloc(0x948d10n, 64n, 300n, B),
      alloc(0x948d30n, 32n, 950n, B), // younger than 100 ns at 1000
      alloc(0x948d50n, 8n, 100n, []), // no stack
    ];
    const r = outstanding(allocs, { nowNs: 1000n, minAgeNs: 100n, top: 10, sort: 'size' });
    assert.deepEqual(r.addrLines, [
      '\taddr = 948cd0 size = 16',
      '\taddr = 948cf0 size = 16',
      '\taddr = 948d10 size = 64',
    ]);
    assert.deepEqual(
      r.stacks.map((s) => [s.size, s.count]),
      [
        [32n, 2n],
        [64n, 1n],
      ],
    );
    const byCount = outstanding(allocs, { nowNs: 1000n, minAgeNs: 100n, top: 1, sort: 'count' });
    assert.deepEqual(
      byCount.stacks.map((s) => [s.size, s.count]),
      [[32n, 2n]],
    );
    assert.deepEqual(outstanding(allocs, { nowNs: 1000n, minAgeNs: 0n, top: 1, sort: 'size' }).stacks[0]?.size, 96n);
  });

  it('combined(): stacks with allocations left, the top N by size (or count), printed ascending', () => {
    const dump = (name: string, rows: [string, bigint][]): MapDump => ({
      name,
      keyTypes: [],
      valueType: { kind: 'int', size: 8, signed: true } as never,
      entries: rows.map(([k, v]) => ({
        key: [{ kind: 'string', value: k }],
        value: { kind: 'sum', value: v, signed: true },
      })),
    });
    const sizes = dump('@__csize', [
      ['\n10\n', 4000n],
      ['\n20\n', 3000n],
      ['\n30\n', 0n],
      ['\n40\n', 500n],
    ]);
    const counts = dump('@__ccount', [
      ['\n10\n', 1n],
      ['\n20\n', 3n],
      ['\n30\n', 0n],
      ['\n40\n', 5n],
    ]);
    assert.deepEqual(
      combined(sizes, counts, { top: 2, sort: 'size' }).map((s) => [s.size, s.count, s.stack]),
      [
        [3000n, 3n, [0x20n]],
        [4000n, 1n, [0x10n]],
      ],
    );
    assert.deepEqual(
      combined(sizes, counts, { top: 10, sort: 'count' }).map((s) => s.count),
      [1n, 3n, 5n],
    );
  });

  it('header, entries and frames as bcc prints them', () => {
    assert.equal(reportHeader(10, '11:16:33'), '[11:16:33] Top 10 stacks with outstanding allocations:');
    const s = { stackKey: '', stack: [0x55n], size: 80n, count: 5n };
    assert.equal(
      entryText(s, ['main+0x6d [allocs]', '__libc_start_main+0xf0 [libc-2.21.so]']),
      '\t80 bytes in 5 allocations from stack\n\t\tmain+0x6d [allocs]\n\t\t__libc_start_main+0xf0 [libc-2.21.so]',
    );
    const f = { address: 0x55f0n, name: 'main', offset: 0x6d, module: '/usr/bin/allocs', kernel: false } as never;
    assert.equal(frameLine(0x55f0n, f, true), '0x00000000000055f0\tmain+0x6d [allocs]');
    assert.equal(frameLine(0x55f0n, f, false), 'main+0x6d [allocs]');
  });
});

/** The report blocks of memleak's stdout, each as its lines after the `[time] Top N ...` header. */
function reports(stdout: string): string[][] {
  const out: string[][] = [];
  for (const line of stdout.split('\n')) {
    if (/^\[\d\d:\d\d:\d\d\] Top \d+ stacks with outstanding allocations:$/.test(line)) out.push([]);
    else if (out.length && line !== '') out.at(-1)!.push(line);
  }
  return out;
}

const LEAK_CALLOC = /^\t3000 bytes in 3 allocations from stack$/;
const LEAK_MALLOC = /^\t28000 bytes in 7 allocations from stack$/;
const FRAME = (fn: string): RegExp => new RegExp(`^\\t\\t0x[0-9a-f]{16}\\t${fn}\\+0x[0-9a-f]+ \\[bpfs_leakprog\\]$`);

describe('memleak on the live kernel', () => {
  const skip = liveSkipReason() ?? leakprogSkipReason();

  it('-p PID: exactly the two leaking stacks, with their totals, named by function', { skip }, async () => {
    const prog = spawn(leakprogPath(), ['wait'], { stdio: ['pipe', 'pipe', 'inherit'] });
    let progOut = '';
    prog.stdout.on('data', (b: Buffer) => {
      progOut += b.toString();
    });
    const progDone = new Promise<number | null>((resolve) => prog.on('close', (c) => resolve(c)));
    try {
      const run = startBpfscope(['memleak', '-p', String(prog.pid), '1'], { timeoutMs: 60_000 });
      assert.ok(await run.waitFor(/^Attaching to pid \d+, Ctrl\+C to quit\.\n/, 20_000), run.stderr());
      assert.equal(run.stdout(), `Attaching to pid ${prog.pid}, Ctrl+C to quit.\n`);
      prog.stdin.write('x');
      // Allocations are reported once older than 500 ms (-o default): wait for a report with both stacks.
      const both = (): boolean => reports(run.stdout()).some((r) => r.filter((l) => / bytes in /.test(l)).length >= 2);
      for (let i = 0; i < 100 && !both(); i++) await new Promise((r) => setTimeout(r, 100));
      assert.ok(both(), run.stdout());
      assert.equal(progOut, 'leaked\n');
      prog.stdin.end(); // the program exits; so does memleak, after a last report
      assert.equal(await progDone, 0);
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      const last = reports(r.stdout).at(-1)!;
      const entries = last.filter((l) => / bytes in /.test(l));
      assert.equal(entries.length, 2, r.stdout);
      // Ascending by size: the calloc stack (3000) first, then malloc (28000).
      assert.match(last[0]!, LEAK_CALLOC);
      assert.match(last[1]!, FRAME('bpfs_leak_calloc'));
      assert.match(last[2]!, FRAME('main'));
      const m = last.findIndex((l) => LEAK_MALLOC.test(l));
      assert.ok(m > 2, r.stdout);
      assert.match(last[m + 1]!, FRAME('bpfs_leak_malloc'));
      assert.match(last[m + 2]!, FRAME('main'));
      assert.doesNotMatch(r.stdout, /bpfs_churn/);
    } finally {
      prog.kill('SIGKILL');
    }
  });

  it('-c COMMAND --combined-only -z 2000: the malloc leak only, reported when the command ends', { skip }, async () => {
    const cmd = `${leakprogPath()} linger`;
    const r = await runBpfscope(['memleak', '-c', cmd, '--combined-only', '-z', '2000'], { timeoutMs: 60_000 });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n');
    assert.equal(lines[0], `Executing '${cmd}' and tracing the resulting process.`);
    // the command writes to the same stdout, and runs from attach on: its line and the header may come in either
    // order (the header is printed once the tool has started, the command resumed when the probes are attached)
    const [header, leaked] = lines[1] === 'leaked' ? [lines[2]!, lines[1]] : [lines[1]!, lines[2]];
    assert.match(header, /^Attaching to pid \d+, Ctrl\+C to quit\.$/);
    assert.equal(leaked, 'leaked', 'the command writes to the same stdout');
    const all = reports(r.stdout);
    assert.equal(all.length, 1, r.stdout);
    const rep = all[0]!;
    assert.match(rep[0]!, LEAK_MALLOC);
    assert.match(rep[1]!, /^\t\tbpfs_leak_malloc\+0x[0-9a-f]+ \[bpfs_leakprog\]$/);
    assert.match(rep[2]!, /^\t\tmain\+0x[0-9a-f]+ \[bpfs_leakprog\]$/);
    assert.equal(rep.filter((l) => / bytes in /.test(l)).length, 1, r.stdout);
  });

  /** The two leaking stacks as the text test sees them: [function, bytes, allocations], ascending by bytes. */
  const LEAKS = [
    ['bpfs_leak_calloc', 3000, 3],
    ['bpfs_leak_malloc', 28000, 7],
  ];

  it(
    '--json -c COMMAND --svg FILE: the two leaking stacks as objects, and a flame graph of their bytes',
    { skip },
    async () => {
      const dir = tempDir();
      try {
        const svg = join(dir, 'leak.svg');
        const cmd = `${leakprogPath()} linger`;
        const r = await runBpfscope(['memleak', '--json', '-c', cmd, '--svg', svg], { timeoutMs: 60_000 });
        assert.equal(r.code, 0, r.stderr);
        // the command's own line shares stdout; every other line is one JSON object (no messages)
        const objs = jsonLines<{
          time: string;
          stacks: { size: number; count: number; frames: { name?: string }[] }[];
        }>(r.stdout.replace(/^leaked\n/m, ''));
        assert.ok(objs.length >= 1, r.stdout);
        const last = objs.at(-1)!;
        assert.match(last.time, /^\d\d:\d\d:\d\d$/);
        const leaks = last.stacks.filter((s) => /^bpfs_leak_/.test(s.frames[0]?.name ?? ''));
        assert.deepEqual(
          leaks.map((s) => [s.frames[0]!.name, s.size, s.count, s.frames[1]!.name]),
          LEAKS.map(([fn, size, n]) => [fn, size, n, 'main']),
        );
        assert.ok(!JSON.stringify(last).includes('bpfs_churn'));
        const text = readFileSync(svg, 'utf8');
        assert.match(text, /<\/svg>\n$/);
        assert.match(text, /<text id="title" [^>]*>Outstanding Allocations Flame Graph<\/text>/);
        assert.match(text, /<title>bpfs_leak_malloc \(28,000 bytes, [\d.]+%\)<\/title>/);
        assert.match(text, /<title>bpfs_leak_calloc \(3,000 bytes, [\d.]+%\)<\/title>/);
        assert.doesNotMatch(text, /bpfs_churn/);
      } finally {
        removeScratch(dir);
      }
    },
  );

  it(
    "-c COMMAND --format folded: the leaking functions' folded stacks with their bytes, on stdout",
    { skip },
    async () => {
      const cmd = `${leakprogPath()} linger`;
      const r = await runBpfscope(['memleak', '-c', cmd, '--format', 'folded'], { timeoutMs: 60_000 });
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.split('\n').filter((l) => l !== '' && l !== 'leaked');
      // no messages nor reports: folded lines only, ascending by bytes
      for (const l of lines) assert.match(l, /^\S.* \d+$/, l);
      const leaks = lines.filter((l) => /;main;bpfs_leak_\w+ \d+$/.test(l)).map((l) => l.replace(/^.*;main;/, 'main;'));
      assert.deepEqual(leaks, ['main;bpfs_leak_calloc 3000', 'main;bpfs_leak_malloc 28000']);
    },
  );

  it(
    'runTool -c COMMAND --format pprof --output FILE: the report as objects, pprof space/bytes',
    { skip },
    async () => {
      const dir = tempDir();
      try {
        const pb = join(dir, 'leak.pb');
        const run = await runTool('memleak', ['-c', `${leakprogPath()} linger`, '--format', 'pprof', '--output', pb]);
        const results = [];
        for await (const x of run.intervals()) results.push(x);
        assert.equal(await run.done, 0);
        assert.ok(results.length >= 1);
        const leaks = results.at(-1)!.stacks.filter((s) => /^bpfs_leak_/.test(s.frames[0]?.name ?? ''));
        assert.deepEqual(
          leaks.map((s) => [s.frames[0]!.name, s.size, s.count]),
          LEAKS.map(([fn, size, n]) => [fn, BigInt(size!), BigInt(n!)]),
        );
        const p = Profile.decode(readFileSync(pb));
        const str = p.stringTable.strings;
        assert.deepEqual(
          p.sampleType.map((t) => `${str[Number(t.type)]}/${str[Number(t.unit)]}`),
          ['space/bytes'],
        );
        const fn = new Map(p.function.map((f) => [Number(f.id), str[Number(f.name)]!]));
        const leaf = new Map(p.location.map((l) => [Number(l.id), fn.get(Number(l.line[0]!.functionId))!]));
        const bytes = new Map<string, number>();
        for (const x of p.sample) {
          const name = leaf.get(Number(x.locationId[0]))!;
          bytes.set(name, (bytes.get(name) ?? 0) + Number(x.value[0]));
        }
        assert.equal(bytes.get('bpfs_leak_malloc'), 28000);
        assert.equal(bytes.get('bpfs_leak_calloc'), 3000);
      } finally {
        removeScratch(dir);
      }
    },
  );
});

describe('memleak flame graph input', () => {
  it('memleakFolded: outermost frame first, equal stacks summed, ascending, empty ones left out', () => {
    const f = (name: string) => ({ addr: 1n, name, offset: 0, kernel: false, source: 'elf' as never });
    assert.deepEqual(
      memleakFolded([
        { size: 40n, frames: [f('leak'), f('main')] },
        { size: 2n, frames: [f('other'), f('main')] },
        { size: 8n, frames: [f('leak'), f('main')] },
        { size: 0n, frames: [f('freed'), f('main')] },
        { size: 5n, frames: [] },
      ]),
      ['main;other 2', 'main;leak 48'],
    );
  });

  it('--json with -t is refused in one sentence; --output without --format too', async () => {
    const t = await runBpfscope(['memleak', '--json', '-t', '-p', String(process.pid)]);
    assert.equal(t.code, 1);
    assert.match(t.stderr, /memleak: -t prints one text line per call; --json and runTool give the reports/);
    const o = await runBpfscope(['memleak', '--output', '/tmp/x.pb', '-p', String(process.pid)]);
    assert.equal(o.code, 1);
    assert.match(o.stderr, /memleak: --output FILE goes with --format/);
  });
});

/**
 * `bpfscope heatmap --hist` live: a bpfscope program's own `-f json` output (a hist() printed and cleared at known
 * points) through the heat map, whose cells must hold the known counts:
 * - columns cut by the workload itself (a getppid() after each phase of reads of known sizes prints the map), so
 *   the counts do not depend on timing;
 * - an `interval:ms:` program that adds known values each tick (one column a tick, the oracle's output too: the
 *   same program through bpftrace 0.17 gives the same cells).
 * Cells are read back from the SVG's hover arguments: s('TIME','RANGE',count,acc,total).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { bpftraceSkipReason, repoRoot, startTool, type Tool } from '../helpers/cli.js';
import { liveSkipReason, startBpfscope } from './helpers.js';

/** `bpfscope heatmap ARGS` with `input` on stdin. */
function heatmap(args: string[], input: string): { code: number | null; stdout: string; stderr: string } {
  const root = repoRoot();
  const argv = fileURLToPath(import.meta.url).includes('/dist/')
    ? [join(root, 'dist', 'bundle', 'bpfscope.cjs'), 'heatmap', ...args]
    : ['--import', import.meta.resolve('tsx'), join(root, 'src', 'cli', 'main.ts'), 'heatmap', ...args];
  const r = spawnSync(process.execPath, argv, { input, maxBuffer: 1 << 26 });
  return { code: r.status, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/** The drawn cells, "TIME RANGE count". */
function cells(svg: string): string[] {
  return [...svg.matchAll(/onmouseover="s\('([^']*)','([^']*)',(\d+),\d+,\d+\)"/g)].map(
    (m) => `${m[1]} ${m[2]} ${m[3]}`,
  );
}

describe('heatmap --hist (live)', () => {
  const skip = liveSkipReason();

  it('columns cut by the reader: each phase of reads is one column with its known sizes', { skip }, async () => {
    // This process reads /dev/zero through two descriptors: `data` (reads of known sizes) and `cut`, whose read
    // prints and clears the map, then printf()s "cut"; print, clear and printf are handled in order, so once the
    // n-th "cut" is out, the map is empty again and the next phase can start (no race, no sleep).
    const data = openSync('/dev/zero', 'r');
    const cut = openSync('/dev/zero', 'r');
    const buf = Buffer.alloc(1 << 20);
    const self = `pid == ${process.pid} && tid == ${process.pid}`;
    const prog =
      `tracepoint:syscalls:sys_enter_read /${self} && args.fd == ${data}/ { @bytes = hist(args.count); }` +
      ` tracepoint:syscalls:sys_enter_read /${self} && args.fd == ${cut}/ {` +
      ` print(@bytes); clear(@bytes); printf("cut\\n"); } END { clear(@bytes); }`;
    const run = startBpfscope(['-f', 'json', '-e', prog], { timeoutMs: 60_000 });
    const cuts = (n: number) => ({ test: (s: string) => s.split('"data": "cut\\n"').length > n }) as RegExp;
    try {
      assert.ok(await run.waitFor(/"type": "attached_probes"/, 30_000), run.stderr());
      // Phases: 3 reads of 100 bytes | 5 of 4096 | nothing | 2 of 100 and 1 of 1000000.
      const phases = [[100, 100, 100], [4096, 4096, 4096, 4096, 4096], [], [100, 100, 1000000]];
      for (const [i, sizes] of phases.entries()) {
        for (const n of sizes) assert.equal(readSync(data, buf, 0, n, null), n);
        readSync(cut, buf, 0, 1, null);
        assert.ok(await run.waitFor(cuts(i + 1), 30_000), `cut ${i + 1}: ${run.stdout()}${run.stderr()}`);
      }
    } finally {
      run.child.kill('SIGINT');
      closeSync(data);
      closeSync(cut);
    }
    const done = await run.done;
    assert.equal(done.code, 0, done.stderr);
    const r = heatmap(['--hist', '--unitslabel=bytes'], done.stdout);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(cells(r.stdout), [
      '0 64-127 bytes 3',
      '1 4096-8191 bytes 5',
      '3 64-127 bytes 2',
      '3 524288-1048575 bytes 1',
    ]);
    // Rows: 64-127 up to 524288-1048575, every log2 bucket between drawn (14 rows of 8 px, trace2heatmap.pl's
    // height: rows * 8 + 36 + 54).
    assert.match(r.stdout, /<svg [^>]*height="202"/);
  });

  it("interval:ms: one column a tick, known values added each tick; the oracle's JSON too", { skip }, async () => {
    // Each tick adds known values, prints and clears the map, then printf()s "tick"; the next tick only counts once
    // this process has seen the "tick" line and acknowledged it with a read of /dev/zero (print, clear and printf
    // are handled in order, after the tick: without the handshake a late print would show two ticks' values).
    const want = [
      '0 8-15 1',
      '0 512-1023 1',
      '0.05 16-31 1',
      '0.05 512-1023 1',
      '0.1 2-3 2',
      '0.1 16-31 1',
      '0.1 512-1023 1',
      '0.15 2-3 2',
      '0.15 32-63 1',
      '0.15 512-1023 1',
    ];
    const ack = openSync('/dev/zero', 'r');
    const buf = Buffer.alloc(1);
    const ticks = (n: number) => ({ test: (s: string) => s.split('"data": "tick\\n"').length > n }) as RegExp;
    async function run(tool: Tool): Promise<string> {
      const arrow = tool === 'bpftrace' ? '->' : '.';
      const prog =
        `tracepoint:syscalls:sys_enter_read /pid == ${process.pid} && tid == ${process.pid} && args${arrow}fd == ${ack}/` +
        ' { @acked++; }' +
        ' interval:ms:50 /@n == @acked/ { @n++; @h = hist(@n * 10); @h = hist(1000);' +
        ' if (@n > 2) { @h = hist(3); @h = hist(3); } print(@h); clear(@h); printf("tick\\n"); if (@n == 4) { exit(); } }' +
        ' END { clear(@h); clear(@n); clear(@acked); }';
      const t = startTool(tool, ['-f', 'json', '-e', prog], { timeoutMs: 60_000 });
      for (let i = 1; i <= 3; i++) {
        assert.ok(await t.waitFor(ticks(i), 30_000), `${tool} tick ${i}: ${t.stdout()}${t.stderr()}`);
        readSync(ack, buf, 0, 1, null);
      }
      const r = await t.done;
      assert.equal(r.code, 0, `${tool}: ${r.stderr}`);
      return r.stdout;
    }
    try {
      const ours = heatmap(['--hist', '--stepsec=0.05'], await run('bpfscope'));
      assert.equal(ours.code, 0, ours.stderr);
      assert.deepEqual(cells(ours.stdout), want);
      // bpftrace 0.17's JSON (spaces after commas, blank lines) gives the same cells.
      if (bpftraceSkipReason()) return;
      const oracle = heatmap(['--hist', '--stepsec=0.05'], await run('bpftrace'));
      assert.equal(oracle.code, 0, oracle.stderr);
      assert.deepEqual(cells(oracle.stdout), want);
    } finally {
      closeSync(ack);
    }
  });
});

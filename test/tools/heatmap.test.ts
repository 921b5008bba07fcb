/**
 * `--heatmap FILE` of the histogram tools (src/tools/framework/heatmap.ts), live:
 * - biolatency on a loop device (direct I/O to a file on a disk) read with O_DIRECT by two processes: one
 *   unthrottled (sub-millisecond reads) and one in a blkio cgroup limited to 10 read IOPS on the backing disk (the
 *   loop worker charges its backing I/O to the reader's cgroup, so each of its reads waits ~100 ms): the heat map
 *   shows two bands, with the known numbers of reads;
 * - runqlat -p on one of two CPU hogs pinned to one CPU: its waits are the other hog's time slices (milliseconds);
 * - the hidden option's errors (hardirqs without -d, an unwritable path).
 * Cells are read back from the SVG's hover arguments: s('TIME','LOW-HIGH UNIT',count,acc,total).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readlinkSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { workloadCommand, workloadPath } from '../helpers/workload.js';
import { liveSkipReason, loopSkipReason, removeScratch, runBpfscope, scratchDir, startBpfscope } from './helpers.js';

interface Cell {
  time: string;
  low: number;
  high: number;
  unit: string;
  count: number;
}

/** The drawn cells of a histogram heat map. */
function cells(svg: string): Cell[] {
  const re = /onmouseover="s\('([^']*)','(\d+)-(\d+) (\w+)',(\d+),(\d+),(\d+)\)"/g;
  return [...svg.matchAll(re)].map((m) => ({
    time: m[1]!,
    low: Number(m[2]),
    high: Number(m[3]),
    unit: m[4]!,
    count: Number(m[5]),
  }));
}

const BLKIO = '/sys/fs/cgroup/blkio';

/** Completions of the 32 reads the kernel may drop before the tools see them (see the biolatency case). */
const MAX_MISSED = 3;

/** The whole disk (MAJ:MIN) holding `dir`'s file system: blk-throttle rules apply to disks, not partitions. */
function diskOf(dir: string): string {
  const dev = statSync(dir).dev;
  const majmin = `${Math.floor(dev / 256) & 0xfff}:${(dev & 0xff) | ((dev >> 12) & 0xfff00)}`;
  const sys = `/sys/dev/block/${majmin}`;
  if (!existsSync(sys)) return majmin;
  if (existsSync(join(sys, 'partition'))) {
    return readFileSync(join(sys, '..', 'dev'), 'utf8').trim();
  }
  return majmin;
}

function throttleSkipReason(): string | undefined {
  if (!existsSync(join(BLKIO, 'blkio.throttle.read_iops_device'))) {
    return 'no cgroup v1 blkio controller with throttling (blkio.throttle.read_iops_device)';
  }
  const dir = existsSync('/var/tmp') ? '/var/tmp' : '/tmp';
  const disk = diskOf(dir);
  if (!existsSync(`/sys/dev/block/${disk}`) || readlinkSync(`/sys/dev/block/${disk}`).includes('/virtual/')) {
    return `${dir} is not on a real disk (${disk}): the throttle needs one`;
  }
  return undefined;
}

describe('--heatmap (live)', () => {
  const skip = liveSkipReason() ?? loopSkipReason() ?? throttleSkipReason();

  it('biolatency: unthrottled and throttled O_DIRECT reads of a loop device make two bands', { skip }, async () => {
    const dir = scratchDir();
    const loops: string[] = [];
    const cg = join(BLKIO, `bpfscope-heat-${process.pid}`);
    try {
      for (const name of ['a.img', 'b.img']) {
        writeFileSync(join(dir, name), Buffer.alloc(4 << 20, 1));
        loops.push(
          execFileSync('losetup', ['--find', '--show', '--direct-io=on', join(dir, name)], {
            encoding: 'utf8',
          }).trim(),
        );
      }
      const [traced, warmup] = loops as [string, string];
      mkdirSync(cg);
      writeFileSync(join(cg, 'blkio.throttle.read_iops_device'), `${diskOf(dir)} 10\n`);
      const svgPath = join(dir, 'bio.svg');
      const run = startBpfscope(['biolatency', '--heatmap', svgPath, '-d', traced.replace('/dev/', ''), '1'], {
        timeoutMs: 60_000,
      });
      const snoopPath = join(dir, 'snoop.svg');
      const snoop = startBpfscope(['biosnoop', '--heatmap', snoopPath, '-d', traced.replace('/dev/', '')], {
        timeoutMs: 60_000,
      });
      assert.ok(await run.waitFor(/Tracing block device I\/O/, 30_000), run.stderr());
      assert.ok(await snoop.waitFor(/LAT\(ms\)/, 30_000), snoop.stderr());
      // 16 fast reads.
      const fast = spawnSync(workloadPath(), ['odirect-read', traced, '16', '4096'], { encoding: 'utf8' });
      assert.equal(fast.status, 0, fast.stderr);
      // In the throttled cgroup: 10 reads of the other device use up the throttle's initial allowance, then 16
      // reads of the traced one wait for the 10 IOPS budget.
      const slow = spawnSync(
        'sh',
        [
          '-c',
          `echo $$ > ${cg}/cgroup.procs && exec ${workloadCommand('odirect-read', warmup, 10, 4096, 'odirect-read', traced, 16, 4096)}`,
        ],
        { encoding: 'utf8' },
      );
      assert.equal(slow.status, 0, slow.stderr);
      run.child.kill('SIGINT');
      snoop.child.kill('SIGINT');
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      const sr = await snoop.done;
      assert.equal(sr.code, 0, sr.stderr);
      // Up to MAX_MISSED of the 32 completions may be missing, whatever stderr says. Measured on 6.18 under load (a
      // script repeating this test's steps, 2026-11-28): about one run in 6-20 lost 1-2 completions of the loop device
      // in every perf-attached tracepoint program at once (bpfscope's biosnoop and biolatency, and bpftrace 0.17 run
      // beside them), while a tracefs instance with the same event and filter recorded all 32 and no program's
      // recursion_misses counter moved: the kernel dropped the perf event before any BPF program ran. Not a fault of
      // the tools, and nothing they can count.
      const snoopLines = sr.stdout.trim().split('\n').length - 1;
      const snoopMissed = 32 - snoopLines;
      assert.ok(snoopMissed >= 0 && snoopMissed <= MAX_MISSED, sr.stdout + sr.stderr);
      assert.equal(snoopLines, 32 - snoopMissed, sr.stdout + sr.stderr);
      // biosnoop's heat map is bpfscope heatmap's (trace2heatmap.pl's rules: 50 linear rows up to the largest
      // latency, in us; here every event is drawn): the 32 reads, the fast ones in the bottom rows (under 8 ms: a loaded machine
      // stretches a fast read past the first 2 ms row), the throttled
      // ones in the upper half.
      const snoopCells = [
        ...readFileSync(snoopPath, 'utf8').matchAll(/onmouseover="s\('[^']*','(\d+)-(\d+)us',(\d+),/g),
      ];
      const bottom = snoopCells.filter((m) => Number(m[2]) <= 8192).reduce((a, m) => a + Number(m[3]), 0);
      const upper = snoopCells.filter((m) => Number(m[1]) >= 32768).reduce((a, m) => a + Number(m[3]), 0);
      assert.equal(
        snoopCells.reduce((a, m) => a + Number(m[3]), 0),
        32 - snoopMissed,
      );
      assert.ok(bottom >= 16 - snoopMissed, `biosnoop rows under 8 ms: ${bottom}`);
      assert.ok(upper >= 12, `biosnoop upper rows: ${upper}`);
      const svg = readFileSync(svgPath, 'utf8');
      const all = cells(svg);
      assert.ok(all.every((c) => c.unit === 'usecs'));
      const sum = (f: (c: Cell) => boolean): number => all.filter(f).reduce((a, c) => a + c.count, 0);
      const drawn = all.reduce((a, c) => a + c.count, 0);
      const missed = 32 - drawn;
      assert.ok(missed >= 0 && missed <= MAX_MISSED, r.stderr + JSON.stringify(all));
      assert.equal(
        sum(() => true),
        32 - missed,
        JSON.stringify(all),
      );
      // Two bands: everything under 8 ms (the unthrottled reads, and those the throttle let through at once) or at
      // 32 ms and above (the throttled ones, ~100 ms each); at least 12 of the 16 throttled reads waited.
      const low = sum((c) => c.high < 8192);
      const high = sum((c) => c.low >= 32768);
      assert.equal(low + high, 32 - missed, JSON.stringify(all));
      assert.ok(high >= 12 && high <= 16, `throttled band: ${high}`);
      assert.ok(low >= 16 - missed, `fast band: ${low}`);
      // The rows between the bands are drawn (empty), so the y axis keeps its log2 scale.
      assert.match(svg, /<svg version="1.1" width="\d+" height="\d+"/);
      const rows = svg.match(/'(\d+)-(\d+) usecs'/g) ?? [];
      assert.ok(rows.length > 0);
    } finally {
      for (const l of loops) spawnSync('losetup', ['-d', l]);
      if (existsSync(cg)) {
        for (const pid of readFileSync(join(cg, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
          writeFileSync(join(BLKIO, 'cgroup.procs'), `${pid}\n`);
        }
        rmdirSync(cg);
      }
      removeScratch(dir);
    }
  });
});

describe('--heatmap runqlat (live)', () => {
  const skip = liveSkipReason() ?? (spawnSync('taskset', ['-V']).status !== 0 ? 'taskset is not installed' : undefined);

  it('runqlat -p: a CPU hog sharing its CPU with another waits for the other one’s time slices', { skip }, async () => {
    const dir = scratchDir();
    // Each hog waits for a byte on stdin, then spins 3 s: they start together once runqlat is attached.
    const hogs = [0, 1].map(() =>
      spawn('taskset', ['-c', '0', workloadPath(), 'wait-stdin', 'spin', '3000'], {
        stdio: ['pipe', 'ignore', 'ignore'],
      }),
    );
    try {
      const svgPath = join(dir, 'runq.svg');
      // taskset execs the workload: the same PID.
      const run = startBpfscope(['runqlat', '--heatmap', svgPath, '-p', String(hogs[0]!.pid), '1'], {
        timeoutMs: 60_000,
      });
      assert.ok(await run.waitFor(/Tracing run queue latency/, 30_000), run.stderr());
      for (const h of hogs) h.stdin!.end('x');
      await Promise.all(
        hogs.map((h) => new Promise((resolve) => (h.exitCode !== null ? resolve(0) : h.on('exit', resolve)))),
      );
      run.child.kill('SIGINT');
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      const all = cells(readFileSync(svgPath, 'utf8'));
      const total = all.reduce((a, c) => a + c.count, 0);
      const long = all.filter((c) => c.low >= 256).reduce((a, c) => a + c.count, 0);
      assert.ok(total >= 10, `waits counted: ${total}`);
      // A preempted hog waits while the other one runs its slice (sub-millisecond waits are other tasks' turns).
      assert.ok(long >= total * 0.8, JSON.stringify(all));
      // One column per second of the run.
      assert.ok(new Set(all.map((c) => c.time)).size >= 2, JSON.stringify(all));
    } finally {
      for (const h of hogs) h.kill('SIGKILL');
      removeScratch(dir);
    }
  });
});

describe('--heatmap errors', () => {
  const skip = liveSkipReason();
  it('hardirqs without -d: one sentence, nothing attached', { skip }, async () => {
    const r = await runBpfscope(['hardirqs', '--heatmap', '/tmp/bpfscope-never.svg', '1', '1']);
    assert.equal(r.code, 1);
    assert.equal(r.stderr.trim(), 'ERROR: hardirqs: --heatmap draws the -d histograms: add -d');
    assert.equal(existsSync('/tmp/bpfscope-never.svg'), false);
  });

  it('an unwritable path fails before attaching', { skip }, async () => {
    const r = await runBpfscope(['runqlat', '--heatmap', '/nonexistent-dir/x.svg', '1', '1']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^ERROR: --heatmap \/nonexistent-dir\/x\.svg: ENOENT: no such file or directory/);
    assert.doesNotMatch(r.stdout, /Tracing/);
  });
});

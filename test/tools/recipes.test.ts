/**
 * The flame graph recipes of docs/visualisations.md ("Flame graphs of other events"), live: each recipe's
 * one-liner traces test/tools/fixtures/recipes.c (built `cc -O0 -g -fno-omit-frame-pointer`), which makes one known
 * function hot for that event, then `stackcollapse-bpftrace | flamegraph` as the recipe says; the folded stacks
 * must give the hot function the known count (page faults, malloc bytes) or the bulk (block I/O), and the SVG must
 * draw it.
 *
 * The workload runs with a handshake (`-s`): it waits for a line on stdin before its step and prints "done" after
 * it, then lives until stdin closes, so the tracer (attached with -p) prints the stacks while the process still
 * exists and its symbols resolve. Every wait is on an event (the attach message, "done", exits), never a sleep.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { arch } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { repoRoot, startTool } from '../helpers/cli.js';
import { ccSkipReason, compileFixture } from '../helpers/compile.js';
import { liveSkipReason, loopSkipReason, removeScratch, scratchDir } from './helpers.js';

const COMM = 'bpfs_recipes';

function recipesPath(): string {
  return compileFixture(join(repoRoot(), 'test', 'tools', 'fixtures', 'recipes.c'), COMM, [
    '-O0',
    '-g',
    '-fno-omit-frame-pointer',
  ]);
}

/** `bpfscope ARGS` with `input` on stdin (the flame graph commands). */
function bpfscope(args: string[], input: string): string {
  const root = repoRoot();
  const argv = fileURLToPath(import.meta.url).includes('/dist/')
    ? [join(root, 'dist', 'bundle', 'bpfscope.cjs'), ...args]
    : ['--import', import.meta.resolve('tsx'), join(root, 'src', 'cli', 'main.ts'), ...args];
  const r = spawnSync(process.execPath, argv, { input, maxBuffer: 1 << 28 });
  assert.equal(r.status, 0, `bpfscope ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.toString();
}

/** Resolves once `child`'s stdout has printed `text`; rejects if it exits first. */
function waitOutput(child: ChildProcess, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (b: Buffer) => {
      out += b.toString();
      if (out.includes(text)) {
        child.stdout!.off('data', onData);
        child.off('exit', onExit);
        resolve();
      }
    };
    const onExit = (code: number | null) => reject(new Error(`workload exited (${code}) before "${text}": ${out}`));
    child.stdout!.on('data', onData);
    child.on('exit', onExit);
  });
}

interface Traced {
  /** Folded stacks (`stackcollapse-bpftrace` of the map output), stack to value. */
  folded: Map<string, number>;
  svg: string;
}

/**
 * Runs the workload `step` with the tracer `program(pid)` attached with -p, then the recipe's
 * `stackcollapse-bpftrace | flamegraph FLAGS`.
 */
async function recipe(program: (pid: number) => string, step: string[], flags: string[] = []): Promise<Traced> {
  const wl = spawn(recipesPath(), ['-s', ...step], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => wl.on('exit', (code) => resolve(code)));
  let out: string;
  try {
    const t = startTool('bpfscope', ['-e', program(wl.pid!), '-p', String(wl.pid)], { timeoutMs: 120_000 });
    const attached = await t.waitFor(/Attached \d+ probes?/, 60_000);
    if (!attached) {
      const r = await t.done;
      assert.fail(`bpfscope did not attach: ${r.stderr}`);
    }
    const done = waitOutput(wl, 'done');
    wl.stdin!.write('go\n');
    await done;
    t.signal('SIGINT');
    const r = await t.done;
    assert.equal(r.code, 0, r.stderr);
    out = r.stdout;
  } finally {
    wl.stdin!.end();
  }
  assert.equal(await exited, 0);
  const foldedText = bpfscope(['stackcollapse-bpftrace'], out);
  const folded = new Map<string, number>();
  for (const l of foldedText.split('\n')) {
    if (l === '') continue;
    const i = l.lastIndexOf(' ');
    folded.set(l.slice(0, i), (folded.get(l.slice(0, i)) ?? 0) + Number(l.slice(i + 1)));
  }
  return { folded, svg: bpfscope(['flamegraph', ...flags], foldedText) };
}

/** Sum of the values of the stacks whose frames (offsets removed) match `frames` as a `;`-joined regex. */
function sumOf(folded: Map<string, number>, frames: RegExp): number {
  let n = 0;
  for (const [stack, v] of folded) if (frames.test(stack.replace(/\+\d+(?=;|$)/g, ''))) n += v;
  return n;
}

function total(folded: Map<string, number>): number {
  let n = 0;
  for (const v of folded.values()) n += v;
  return n;
}

/** The SVG draws a frame named `name` (its title: "name (N samples, P%)" or with the count name). */
function drawsFrame(svg: string, name: string): boolean {
  return new RegExp(`<title>${name}(\\+\\d+)? \\(`).test(svg);
}

const skip =
  liveSkipReason() ?? ccSkipReason() ?? (arch() !== 'x64' ? 'the workload assumes 4 KiB pages (x86-64)' : undefined);

describe('flame graph recipes (live)', () => {
  it('page faults: software:page-faults:1 by user stack', { skip }, async () => {
    // 64 MiB touched in bpfs_fault_hot (16384 pages), 8 MiB in touch() under bpfs_fault_cold (2048).
    const r = await recipe(
      (pid) => `software:page-faults:1 /pid == ${pid}/ { @[ustack] = count(); }`,
      ['faults', '64'],
      ['--title', 'Page Faults', '--countname', 'faults'],
    );
    assert.equal(sumOf(r.folded, /;main;bpfs_fault_hot$/), 16384);
    assert.equal(sumOf(r.folded, /;main;bpfs_fault_cold;touch$/), 2048);
    assert.ok(sumOf(r.folded, /;bpfs_fault_hot$/) > 0.8 * total(r.folded), JSON.stringify([...r.folded]));
    assert.ok(drawsFrame(r.svg, 'bpfs_fault_hot'));
  });

  it('allocations: uprobe:libc:malloc, bytes by user stack', { skip }, async () => {
    // 20000 malloc(4096) under bpfs_alloc_outer -> bpfs_alloc_hot, 2500 malloc(64) under bpfs_alloc_cold. At
    // malloc's first instruction the frame-pointer walk skips the direct caller (its return address is on the
    // stack top, not in a frame yet): the stacks read main;bpfs_alloc_outer;malloc and main;malloc.
    const r = await recipe(
      (pid) => `uprobe:libc:malloc /pid == ${pid}/ { @[ustack] = sum(arg0); }`,
      ['malloc', '20000'],
      ['--title', 'malloc() bytes', '--countname', 'bytes'],
    );
    assert.equal(sumOf(r.folded, /;main;bpfs_alloc_outer;malloc$/), 20000 * 4096);
    assert.ok(sumOf(r.folded, /;main;malloc$/) >= 2500 * 64);
    assert.ok(sumOf(r.folded, /;bpfs_alloc_outer;malloc$/) > 0.9 * total(r.folded), JSON.stringify([...r.folded]));
    assert.ok(drawsFrame(r.svg, 'bpfs_alloc_outer'));
  });

  const dioSkip = skip ?? loopSkipReason();
  it('disk I/O: tracepoint:block:block_rq_issue, bytes by kernel and user stack', { skip: dioSkip }, async () => {
    const dir = scratchDir();
    const file = join(dir, 'disk.img');
    writeFileSync(file, Buffer.alloc(8 << 20, 7));
    const loop = spawnSync('losetup', ['--find', '--show', '--direct-io=on', file], { encoding: 'utf8' });
    assert.equal(loop.status, 0, loop.stderr);
    const dev = loop.stdout.trim();
    try {
      // 400 O_DIRECT reads of 4 KiB in bpfs_dio_hot, 50 in bpfs_dio_cold.
      const r = await recipe(
        (pid) => `tracepoint:block:block_rq_issue /pid == ${pid}/ { @[kstack, ustack] = sum(args.bytes); }`,
        ['dio', dev, '400'],
        ['--title', 'Block I/O bytes', '--countname', 'bytes'],
      );
      // Requests issued from the reader's context carry its stacks; one dispatched later by a kernel worker
      // (pid != the reader) is not counted: the hot function has at most its 400 reads and the bulk.
      const hot = sumOf(r.folded, /;main;bpfs_dio_hot;.*;blk_mq_start_request$/);
      assert.ok(hot <= 400 * 4096 && hot > 0.8 * total(r.folded), JSON.stringify([...r.folded]));
      assert.ok(sumOf(r.folded, /;main;bpfs_dio_cold;/) <= 50 * 4096);
      assert.ok(drawsFrame(r.svg, 'bpfs_dio_hot'));
      // block_io_start (Linux 6.5+) fires when the request is made, always in the submitter's context: all 400.
      if (existsSync('/sys/kernel/tracing/events/block/block_io_start')) {
        const s = await recipe(
          (pid) => `tracepoint:block:block_io_start /pid == ${pid}/ { @[kstack, ustack] = sum(args.bytes); }`,
          ['dio', dev, '400'],
        );
        assert.equal(sumOf(s.folded, /;main;bpfs_dio_hot;/), 400 * 4096);
        assert.equal(sumOf(s.folded, /;main;bpfs_dio_cold;/), 50 * 4096);
      }
    } finally {
      spawnSync('losetup', ['-d', dev]);
      removeScratch(dir);
    }
  });
});

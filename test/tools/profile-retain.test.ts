/**
 * What the stack tools keep about the processes they sample (issue 19, soak: `profile` grew ~13 MB a minute under
 * ~30 new processes a second, keeping every sampled process's maps text and address caches until the report).
 * A prepared process keeps only its executable mappings and their shared symbol tables
 * (`SymbolResolver.retire`, called by `ProcessPreparer`), and still resolves its names once it has exited.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { SymbolResolver } from '../../src/symbols/resolver.js';
import { ProcessPreparer } from '../../src/tools/stacktool.js';
import { liveSkipReason, startBpfscope } from './helpers.js';
import { STACKPROG_COMM, stackBlocks, stackprogPath, stackprogSkipReason } from './stackprog.js';

const N = 200;

/** `bpfs_user_burn`'s address in the binary (its st_value; the binary is PIE, mapped from file offset 0). */
function symbolValue(bin: string, name: string): number {
  const line = execFileSync('nm', [bin], { encoding: 'utf8' })
    .split('\n')
    .find((l) => l.endsWith(` ${name}`));
  assert.ok(line, `${name} not in nm ${bin}`);
  return Number.parseInt(line.split(' ')[0]!, 16);
}

/** The lowest address the binary is mapped at in `pid` (its load base), and its number of executable mappings. */
function layout(pid: number, bin: string): { base: number; execMappings: number } {
  const lines = readFileSync(`/proc/${pid}/maps`, 'latin1').split('\n');
  const own = lines.filter((l) => l.endsWith(` ${bin}`));
  return {
    base: Number.parseInt(own[0]!.split('-')[0]!, 16),
    execMappings: lines.filter((l) => / ..x. /.test(l)).length,
  };
}

function exited(c: ChildProcess): Promise<void> {
  return new Promise((res) => (c.exitCode !== null || c.signalCode !== null ? res() : c.once('exit', () => res())));
}

describe('stack tools: what is kept per sampled process', () => {
  const skip = process.getuid?.() !== 0 ? 'reading other processes maps needs root' : stackprogSkipReason();

  it(
    `${N} processes prepared, then exited: their executable mappings only, names still resolve`,
    { skip },
    async () => {
      const bin = stackprogPath();
      const burn = symbolValue(bin, 'bpfs_user_burn');
      const resolver = await SymbolResolver.create();
      const preparer = new ProcessPreparer(resolver);
      const kids: { child: ChildProcess; base: number }[] = [];
      let execMappings = 0;
      try {
        for (let i = 0; i < N; i++) {
          const child = spawn(bin, ['wait', '60000'], { stdio: ['ignore', 'pipe', 'ignore'] });
          // the program is mapped once exec has happened: wait for its maps to name it
          let l: ReturnType<typeof layout> | undefined;
          while (!l) {
            try {
              if (readFileSync(`/proc/${child.pid}/maps`, 'latin1').includes(` ${bin}\n`)) l = layout(child.pid!, bin);
            } catch {
              /* not yet */
            }
            if (!l) await new Promise((r) => setTimeout(r, 2));
          }
          kids.push({ child, base: l.base });
          preparer.onEvent([String(child.pid)]);
        }
        while (preparer.pending > 0) await new Promise((r) => setImmediate(r));
        assert.equal(preparer.count, N);
        // the preparer does not retire processes yet (see stacktool.ts): what retire() keeps is tested here
        for (const k of kids) resolver.retire(k.child.pid!);
        // each waits in nanosleep by now, its libraries loaded
        for (const k of kids) execMappings += layout(k.child.pid!, bin).execMappings;
      } finally {
        for (const k of kids) k.child.kill('SIGKILL');
        await Promise.all(kids.map((k) => exited(k.child)));
      }
      const kept = resolver.retained;
      assert.equal(kept.processes, N);
      // every executable mapping, nothing more; no maps text; the address caches at their smallest (16 entries)
      assert.equal(kept.mappings, execMappings);
      assert.equal(kept.mapsTextChars, 0);
      assert.ok(kept.cacheSlots <= N * 2 * 32, `${kept.cacheSlots} cache slots`);
      // gone, and still named: bpfs_user_burn+4 in each process, at its own load base
      for (const k of kids) {
        assert.equal(existsSync(`/proc/${k.child.pid}`), false);
        const [f] = resolver.userStack(k.child.pid!, [BigInt(k.base + burn + 4)]);
        assert.equal(f?.name, 'bpfs_user_burn', `pid ${k.child.pid}`);
        assert.equal(f?.offset, 4);
        assert.equal(f?.module, bin);
      }
    },
  );
});

describe('stack tools: a PID reused by a new process', () => {
  const skip = process.getuid?.() !== 0 ? 'reading other processes maps needs root' : stackprogSkipReason();

  it("the new process does not get the old one's symbols (reported as PID/START)", { skip }, async () => {
    const bin = stackprogPath();
    const burn = symbolValue(bin, 'bpfs_user_burn');
    const resolver = await SymbolResolver.create();
    const preparer = new ProcessPreparer(resolver);
    const child = spawn(bin, ['wait', '60000'], { stdio: 'ignore' });
    let base: number | undefined;
    try {
      while (base === undefined) {
        try {
          if (readFileSync(`/proc/${child.pid}/maps`, 'latin1').includes(` ${bin}\n`))
            base = layout(child.pid!, bin).base;
        } catch {
          /* not yet */
        }
        if (base === undefined) await new Promise((r) => setTimeout(r, 2));
      }
      preparer.onEvent([`${child.pid}/1000`]);
      while (preparer.pending > 0) await new Promise((r) => setImmediate(r));
    } finally {
      child.kill('SIGKILL');
      await exited(child);
    }
    const addr = BigInt(base + burn + 4);
    assert.equal(resolver.userStack(child.pid!, [addr])[0]?.name, 'bpfs_user_burn', 'named after it exited');
    // the same process reported again (a renamed thread): still named
    preparer.onEvent([`${child.pid}/1000`]);
    while (preparer.pending > 0) await new Promise((r) => setImmediate(r));
    assert.equal(resolver.userStack(child.pid!, [addr])[0]?.name, 'bpfs_user_burn');
    // another process under the PID (another start time), gone before it could be read: nothing of the old one
    preparer.onEvent([`${child.pid}/2000`]);
    while (preparer.pending > 0) await new Promise((r) => setImmediate(r));
    const [f] = resolver.userStack(child.pid!, [addr]);
    assert.equal(f?.name, undefined, `named ${f?.name} from the old process's mappings`);
  });
});

describe('stack tools: exited processes no map entry names', () => {
  const skip = process.getuid?.() !== 0 ? 'reading other processes maps needs root' : stackprogSkipReason();

  it(
    'are forgotten once enough processes were prepared; the ones the map names and live ones stay',
    { skip },
    async () => {
      const bin = stackprogPath();
      const resolver = await SymbolResolver.create();
      const min = ProcessPreparer.SWEEP_EVERY;
      ProcessPreparer.SWEEP_EVERY = 4;
      const preparer = new ProcessPreparer(resolver);
      const live = spawn(bin, ['wait', '60000'], { stdio: 'ignore' });
      try {
        const gone: number[] = [];
        for (let i = 0; i < 3; i++) {
          const c = spawn(bin, ['wait', '1'], { stdio: 'ignore' });
          await exited(c);
          gone.push(c.pid!);
        }
        let asked = 0;
        preparer.sweepWith(() => {
          asked++;
          return new Set([gone[0]!]);
        });
        for (const pid of [...gone, live.pid!]) preparer.onEvent([`${pid}/1`]);
        while (preparer.pending > 0) await new Promise((r) => setImmediate(r));
        assert.equal(asked, 1);
        assert.equal(preparer.swept, 2, 'the two exited processes the map does not name');
        assert.equal(preparer.count, 2);
        assert.equal(resolver.retained.processes, 2);
      } finally {
        ProcessPreparer.SWEEP_EVERY = min;
        live.kill('SIGKILL');
        await exited(live);
      }
    },
  );
});

describe('profile -U on short-lived processes', () => {
  const skip = liveSkipReason() ?? stackprogSkipReason();

  it('processes that exit before the report keep their function names', { skip }, async () => {
    const bin = stackprogPath();
    const run = startBpfscope(['profile', '-U', '-F', '199'], { timeoutMs: 120_000 });
    const pids = new Set<number>();
    try {
      assert.ok(await run.waitFor(/Hit Ctrl-C to end\.\n/, 60_000), run.stderr());
      // 60 processes, 4 at a time, each burning ~60 ms of CPU in bpfs_user_burn / bpfs_kernel_burn, then exiting a
      // second later (profile reads a process's maps when it is first sampled, from its event loop)
      for (let i = 0; i < 60; i += 4) {
        const batch = Array.from({ length: 4 }, () => spawn(bin, ['cpu', '60', 'wait', '1000'], { stdio: 'ignore' }));
        for (const c of batch) pids.add(c.pid!);
        await Promise.all(batch.map(exited));
      }
    } finally {
      run.child.kill('SIGINT');
    }
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    // (a child's samples between fork and exec are under node's comm)
    const mine = stackBlocks(r.stdout).filter((b) => pids.has(b.id) && b.comm === STACKPROG_COMM);
    const seen = new Set(mine.map((b) => b.id));
    assert.ok(seen.size >= 10, `only ${seen.size} of 60 processes sampled`);
    // the sampled processes have their burning functions by name (none of them was alive at report time); one
    // sampled right at its exec may have been read before its libraries were mapped, so not all of them
    const named = [...seen].filter((pid) =>
      mine
        .filter((b) => b.id === pid)
        .some((b) => b.frames.some((f) => /^bpfs_(user|kernel)_burn\+0x[0-9a-f]+ \[.*bpfs_stackprog\]$/.test(f))),
    );
    assert.ok(
      named.length >= 10 && named.length * 4 >= seen.size * 3,
      `${named.length} of ${seen.size} sampled processes named:\n${mine.map((b) => `${b.id}: ${b.frames.join(' | ')}`).join('\n')}`,
    );
  });
});

describe('stack tools: a full map over a long run of short processes', () => {
  // PIDs above the largest pid_max (2^22): never a live process, so each is an exited one once prepared
  const BASE = 1 << 23;

  it('keeps the processes the map names and at most 256 exited others, however many were seen', async () => {
    const resolver = await SymbolResolver.create({ demangle: false });
    const preparer = new ProcessPreparer(resolver);
    // a full map naming 3,000 processes; 9,000 more are sampled after it filled (their samples found no room)
    const named = new Set<number>();
    for (let i = 0; i < 3000; i++) named.add(BASE + i);
    preparer.sweepWith(() => named);
    let most = 0;
    for (let i = 0; i < 12000; i++) {
      preparer.onEvent([`${BASE + i}/1`]);
      if (i % 50 === 49) {
        while (preparer.pending > 0) await new Promise((r) => setImmediate(r));
        most = Math.max(most, resolver.retained.processes);
      }
    }
    // before: a sweep only when the number of processes doubled from what the last one left (up to 6,000 here)
    assert.ok(most <= 3256, `${most} processes kept at one time`);
    assert.ok(preparer.count >= 3000 && preparer.count <= 3256, `${preparer.count} kept at the end`);
    assert.ok(preparer.swept >= 8744, `${preparer.swept} swept`);
  });
});

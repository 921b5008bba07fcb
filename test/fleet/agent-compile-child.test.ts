/**
 * The agent's program compiled in a short-lived child (src/fleet/agent/compile-child.ts, runtime/precompiled.ts):
 * the child runs the built launcher in its internal mode; this process only creates the maps, loads and attaches.
 *
 * 1. A program compiled by the child samples here: a spinning node process, profiled at 99 Hz by pid, reaches a
 *    count of 20 in `@n` (the map plan came from the child), and by the end of the run at least 20 printf records
 *    carrying its pid and comm (the ring buffer and printf plans); the IR was not carried over (empty); after close
 *    no BPF object is held.
 *    (test/fleet/agent.test.ts test 1 covers the whole agent through the launcher: its burner on top of the profile.)
 * 2. A compile error in the child is reported with its message and the child's status; nothing is loaded.
 * 3. Bytes that are not a compiled program, and a probe whose class cannot be carried over, are refused by name.
 * 4. The agent's own program (fleet/agent/profiler.ts buildAgentProgram) has a 128 KiB event ring buffer: loaded
 *    here, the ring's data area is mapped twice (runtime/ringbuf.ts), 4 KiB + 256 KiB, where bpftrace's default of
 *    256 pages mapped 4 KiB + 2 MiB, all of it resident (bench/results/agent-issue15.md section 14).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe as suite, test } from 'node:test';
import { BpfscopeError } from '../../src/errors.js';
import { compileInChild } from '../../src/fleet/agent/compile-child.js';
import { buildAgentProgram } from '../../src/fleet/agent/profiler.js';
import { OutputSink } from '../../src/runtime/output/sink.js';
import { precompile } from '../../src/runtime/precompile.js';
import { type Precompiled, revivePrecompiled } from '../../src/runtime/precompiled.js';
import { Tracer } from '../../src/runtime/tracer.js';
import { ToolOutput, ToolWriter } from '../../src/tools/framework/output.js';
import { fdHeldIds, formatIds, idCount } from '../helpers/bpf-objects.js';
import { bpfscopeEntry, bpfscopeSkipReason } from '../helpers/cli.js';

const skip = bpfscopeSkipReason();

/** A Tracer of `pre` as the agent starts it, its records read the agent's way (fleet/agent/profiler.ts). */
function startPrecompiled(text: string, pre: Precompiled, onRecord: (fields: string[]) => void): Promise<Tracer> {
  const output = new ToolOutput(new ToolWriter(new OutputSink(1), new OutputSink(2, { bufferSize: 0 })));
  output.onEvent(onRecord, 2);
  return Tracer.start({
    source: { name: 'agent', text },
    output,
    precompiled: pre,
    quiet: true,
    printMapsAtExit: false,
    handleSignals: false,
  });
}

suite('agent program compiled in a child process', { skip }, () => {
  test('a program compiled by the child is loaded, attached and samples here; nothing held after close', async () => {
    const spinner = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    try {
      const pid = spinner.pid!;
      const text = `profile:hz:99 /pid == ${pid}/ { @n = count(); printf("%d\\x1f%s\\n", pid, comm); }`;
      const pre = await compileInChild(text, bpfscopeEntry());
      assert.equal(pre.compiled.programs.length, 1);
      assert.equal(pre.compiled.programs[0]!.expanded.provider, 'profile');
      assert.equal(pre.compiled.programs[0]!.fn.items.length, 0, 'the IR is not carried over');
      const seen: string[] = [];
      const tracer = await startPrecompiled(text, pre, (fields) => void seen.push(fields.join(',')));
      try {
        // the count of samples so far, until it reaches 20 (99 Hz on a spinning process: ~0.2 s)
        const count = (): bigint => {
          const n = tracer.readMap('n');
          return n.entries.length === 0 ? 0n : (n.entries[0]!.value as { value: bigint }).value;
        };
        for (const deadline = Date.now() + 20_000; count() < 20n && Date.now() < deadline;) {
          await new Promise((r) => setTimeout(r, 100));
        }
        assert.ok(count() >= 20n, `@n = ${count()} after 20 s`);
        tracer.stop();
        await tracer.wait();
        tracer.finish();
        // every sample's record, delivered by the end of the run
        assert.ok(seen.length >= 20, `${seen.length} records`);
        assert.deepEqual([...new Set(seen)], [`${pid},node`]);
      } finally {
        tracer.close();
      }
      const held = fdHeldIds(process.pid);
      assert.equal(idCount(held), 0, `held after close: ${formatIds(held)}`);
    } finally {
      spinner.kill('SIGKILL');
    }
  });

  test('a compile error in the child: its message and status, nothing loaded', async () => {
    await assert.rejects(compileInChild('profile:hz:99 { @x = no_such_function(); }', bpfscopeEntry()), (e) => {
      assert.ok(e instanceof BpfscopeError);
      assert.match(
        e.message,
        /^compiling the agent's program: the compiling process failed \(status 1\): .*no_such_function/,
      );
      return true;
    });
    assert.equal(idCount(fdHeldIds(process.pid)), 0);
  });

  test('not a compiled program, and a probe that cannot be carried over, are refused by name', () => {
    assert.throws(() => revivePrecompiled(Buffer.from('not v8')), {
      name: 'BpfscopeError',
      message: /^the precompiled program cannot be read: /,
    });
    assert.throws(() => precompile({ name: 'x', text: 'tracepoint:syscalls:sys_enter_getppid { @n = count(); }' }), {
      message: 'a tracepoint probe cannot be compiled in another process',
    });
  });

  test("the agent's program: a 128 KiB ring buffer, mapped as 4 KiB + 2 x 128 KiB", async () => {
    const text = buildAgentProgram({ hz: 49, periodMs: 10_000, maxStacks: 1024, stackStorage: 1024 });
    const pre = await compileInChild(text, bpfscopeEntry());
    assert.equal(pre.compiled.ringbufSize, 128 * 1024);
    /** This process's BPF map mappings (proc(5) /proc/PID/maps): address range -> size in bytes. */
    const bpfMappings = (): Map<string, number> =>
      new Map(
        readFileSync('/proc/self/maps', 'utf8')
          .split('\n')
          .filter((l) => l.endsWith('anon_inode:bpf-map'))
          .map((l) => {
            const range = l.split(' ')[0]!;
            const [lo, hi] = range.split('-');
            return [range, parseInt(hi!, 16) - parseInt(lo!, 16)];
          }),
      );
    const before = bpfMappings();
    const tracer = await startPrecompiled(text, pre, () => {});
    try {
      const added = [...bpfMappings()].filter(([range]) => !before.has(range)).map(([, n]) => n);
      assert.ok(added.includes(4096 + 2 * 128 * 1024), `BPF map mappings: ${added.join(', ')}`);
      assert.ok(
        added.every((n) => n < 1024 * 1024),
        `a BPF map mapping of 1 MiB or more: ${added.join(', ')}`,
      );
    } finally {
      tracer.stop();
      await tracer.wait();
      tracer.close();
    }
    assert.equal(idCount(fdHeldIds(process.pid)), 0);
  });
});

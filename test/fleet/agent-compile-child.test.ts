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
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe as suite, test } from 'node:test';
import { BpfscopeError } from '../../src/errors.js';
import { compileInChild } from '../../src/fleet/agent/compile-child.js';
import { OutputSink } from '../../src/runtime/output/sink.js';
import { precompile, revivePrecompiled } from '../../src/runtime/precompiled.js';
import { Tracer } from '../../src/runtime/tracer.js';
import { ToolOutput, ToolWriter } from '../../src/tools/framework/output.js';
import { fdHeldIds, formatIds, idCount } from '../helpers/bpf-objects.js';
import { bpfscopeEntry, bpfscopeSkipReason } from '../helpers/cli.js';

const skip = bpfscopeSkipReason();

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
      // the agent's way of reading its program's records (fleet/agent/profiler.ts)
      const output = new ToolOutput(new ToolWriter(new OutputSink(1), new OutputSink(2, { bufferSize: 0 })));
      const seen: string[] = [];
      output.onEvent((fields) => void seen.push(fields.join(',')), 2);
      const tracer = await Tracer.start({
        source: { name: 'agent', text },
        output,
        precompiled: pre,
        quiet: true,
        printMapsAtExit: false,
        handleSignals: false,
      });
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
});

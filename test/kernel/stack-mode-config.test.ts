/**
 * `config = { stack_mode = ... }` and `BPFTRACE_STACK_MODE`: the output mode of `kstack`/`ustack` written without a
 * mode (tests/runtime/builtin "ustack builtin with stack_mode config", tests/runtime/config "config as env var" and
 * "env var takes precedence", tests/runtime/call "ustack_stack_mode_env_raw"/"_perf"/"_override"; revision e1b7c393).
 * Frames are checked by their format in each mode (kernel addresses differ between boots); one syscall, one frame.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runTool } from '../helpers/cli.js';
import { workloadCommand } from '../helpers/workload.js';

const PROBE = 'tracepoint:syscalls:sys_enter_getppid /pid == cpid/';
/** One `kstack(1)` frame printed with %s in bpftrace's modes: bpftrace (8 blanks), perf (tab, address), raw. */
const BPFTRACE = '\\n {8}\\w+\\+\\d+\\n';
const PERF = '\\n\\t[0-9a-f]{16} \\w+\\+\\d+\\n';
const RAW = '\\n[0-9a-f]{16}\\n';

async function run(prog: string, env: Record<string, string> = {}) {
  return runTool('bpfscope', ['-e', prog, '-c', workloadCommand('getppid', 1)], { env });
}

describe('stack_mode config and BPFTRACE_STACK_MODE', () => {
  it('stack_mode = perf is the mode of kstack(1) and bare kstack; an explicit mode still wins', async () => {
    const r = await run(
      `config = { stack_mode = perf } ${PROBE} { printf("%s|%s|%s|\\n", kstack(1), kstack(bpftrace, 1), kstack(raw, 1)); @[kstack] = count(); }`,
    );
    assert.equal(r.code, 0, r.stderr);
    const [line, map] = r.stdout.split('\n\n\n');
    assert.match(`${line}\n`, new RegExp(`^${PERF}\\|${BPFTRACE}\\|${RAW}\\|\\n$`));
    // the map key: every frame in perf format
    assert.match(map!, /^@\[\n(\t[0-9a-f]{16} \S+\n)+\]: 1\n$/);
  });

  it('BPFTRACE_STACK_MODE=raw applies and wins over the config block (tests/runtime/config "env var takes precedence")', async () => {
    const prog = `${PROBE} { printf("%s|\\n", kstack(1)); }`;
    const raw = await run(prog, { BPFTRACE_STACK_MODE: 'raw' });
    assert.equal(raw.code, 0, raw.stderr);
    assert.match(raw.stdout, new RegExp(`^${RAW}\\|\\n\\n\\n$`));
    const both = await run(`config = { BPFTRACE_STACK_MODE = perf } ${prog}`, { BPFTRACE_STACK_MODE: 'raw' });
    assert.equal(both.code, 0, both.stderr);
    assert.match(both.stdout, new RegExp(`^${RAW}\\|\\n\\n\\n$`));
    const block = await run(`config = { stack_mode = raw } ${prog}`, { BPFTRACE_STACK_MODE: 'bpftrace' });
    assert.equal(block.code, 0, block.stderr);
    assert.match(block.stdout, new RegExp(`^${BPFTRACE}\\|\\n\\n\\n$`));
  });

  it('rejects a mode it does not know', async () => {
    const bad = await runTool('bpfscope', ['-e', 'config = { stack_mode = 1 } BEGIN { exit(); }']);
    assert.equal(bad.code, 1);
    assert.match(
      bad.stderr,
      /^stdin:1:12-26: ERROR: Invalid value for stack_mode: valid values are bpftrace, raw, perf, and build_id\.$/m,
    );
  });

  it("stack_mode build_id: a bare kstack falls back to raw with bpftrace's warning; kstack(build_id) is an error", async () => {
    const env = await run(`${PROBE} { printf("%s|\\n", kstack(1)); }`, { BPFTRACE_STACK_MODE: 'build_id' });
    assert.equal(env.code, 0, env.stderr);
    assert.match(env.stdout, new RegExp(`^${RAW}\\|\\n\\n\\n$`));
    assert.match(
      env.stderr,
      /^stdin:1:\d+-\d+: WARNING: 'build_id' stack mode can only be used for ustack\. Falling back to 'raw' mode\.$/m,
    );
    const k = await runTool('bpfscope', ['-e', 'BEGIN { @ = kstack(build_id); }']);
    assert.equal(k.code, 1);
    assert.match(k.stderr, /^stdin:1:20-28: ERROR: 'build_id' stack mode can only be used for ustack$/m);
  });
});

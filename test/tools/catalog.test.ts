/**
 * The tool list (src/tools/catalog.ts) and how tools meet the command line: each is registered in COMMANDS with
 * the same summary, `bpfscope tools` lists them, `-h` prints the help and exits 0, a usage error exits 2.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COMMANDS } from '../../src/cli/commands.js';
import { formatToolList, TOOLS } from '../../src/tools/catalog.js';
import { formatHelp, type ParserSpec } from '../../src/tools/framework/argparse.js';
import { runBpfscope } from './helpers.js';

describe('tool catalog', () => {
  it('every tool is a COMMANDS entry with the same summary, and has a SPEC named after it', async () => {
    for (const t of TOOLS) {
      assert.equal(COMMANDS[t.name]?.summary, t.summary, t.name);
      const mod = (await import(`../../src/tools/${t.name}.js`)) as { SPEC: ParserSpec; main: unknown };
      assert.equal(mod.SPEC.prog, t.name);
      assert.equal(typeof mod.main, 'function');
      assert.equal(await COMMANDS[t.name]!.load(), mod.main);
    }
  });

  it('bpfscope tools: one line per tool, then the other commands (flame graphs)', async () => {
    const r = await runBpfscope(['tools']);
    assert.equal(r.code, 0, r.stderr);
    const [tools, others] = r.stdout.split('\nOther commands:\n');
    assert.equal(tools, formatToolList());
    assert.equal(tools!.split('\n').length - 1, TOOLS.length);
    assert.match(r.stdout, /^biolatency +Summarize block device I\/O latency as a histogram$/m);
    assert.deepEqual(
      others!.split('\n').map((l) => l.split(' ')[0]),
      [
        'stackcollapse-perf',
        'stackcollapse-bpftrace',
        'flamegraph',
        'heatmap',
        'difffolded',
        'ps',
        'exporter',
        'agent',
        'ui',
        'tools',
        '',
      ],
    );
    assert.match(others!, /^flamegraph +render folded stacks as an interactive SVG flame graph/m);
  });

  it("-h prints argparse help on stdout, exit 0; a bad flag exits 2 with argparse's message", async () => {
    const h = await runBpfscope(['runqlat', '-h']);
    assert.equal(h.code, 0);
    const spec = ((await import('../../src/tools/runqlat.js')) as { SPEC: ParserSpec }).SPEC;
    assert.equal(h.stdout, formatHelp(spec, 78));
    const bad = await runBpfscope(['runqlat', '--nope']);
    assert.equal(bad.code, 2);
    assert.equal(bad.stdout, '');
    assert.equal(
      bad.stderr,
      'usage: runqlat [-h] [-T] [-m] [-P] [--pidnss] [-L] [-p PID] [interval] [count]\nrunqlat: error: unrecognized arguments: --nope\n',
    );
    const b = await runBpfscope(['bitesize', '-h']);
    assert.equal(b.code, 0);
    assert.equal(
      b.stdout,
      'usage: bitesize [-h]\n\nSummarize block I/O size as a histogram, by process name\n\noptions:\n  -h, --help  show this help message and exit\n',
    );
  });

  it('--ebpf prints the generated bpftrace program instead of running it', async () => {
    const r = await runBpfscope(['softirqs', '--ebpf', '-C']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      'config = { max_map_keys = 10240 }\ntracepoint:irq:softirq_entry {\n  @dist[args.vec] = count();\n}\n',
    );
  });
});

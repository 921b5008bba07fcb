/**
 * `bpfscope ui` parts that need no kernel or browser: the catalogue (every tool once, grouped; forms from the
 * tools' SPECs; only runTool's tools runnable) and the command's argument checks.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { apiTools } from '../../src/tools/api.js';
import { TOOLS } from '../../src/tools/catalog.js';
import { loadCatalog } from '../../src/ui/catalog.js';
import { isLoopback, parseUiArgs } from '../../src/ui/main.js';

describe('ui catalogue', () => {
  it('lists every tool once, in the tool map groups, runnable exactly when runTool runs it', async () => {
    const groups = await loadCatalog();
    assert.deepEqual(
      groups.map((g) => g.name),
      ['CPU', 'memory', 'file systems', 'disks', 'network', 'scheduler', 'languages', 'tracing (any layer)'],
    );
    const tools = groups.flatMap((g) => g.tools);
    assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS.map((t) => t.name).sort());
    // every available tool is one runTool runs; the counting/top tools (ticks of count tables) have no view yet
    const available = tools.filter((t) => t.available).map((t) => t.name);
    const runnable = new Set(apiTools());
    assert.ok(available.every((n) => runnable.has(n)));
    const view = Object.fromEntries(tools.filter((t) => t.available).map((t) => [t.name, t.view]));
    assert.deepEqual(view, {
      bashreadline: 'table',
      biolatency: 'histogram',
      biosnoop: 'table',
      capable: 'table',
      cpudist: 'histogram',
      execsnoop: 'table',
      exitsnoop: 'table',
      ext4slower: 'table',
      funclatency: 'histogram',
      gethostlatency: 'table',
      hardirqs: 'histogram',
      killsnoop: 'table',
      offcputime: 'flame',
      oomkill: 'table',
      opensnoop: 'table',
      profile: 'flame',
      runqlat: 'histogram',
      runqslower: 'table',
      softirqs: 'histogram',
      statsnoop: 'table',
      syncsnoop: 'table',
      tcpaccept: 'table',
      tcpconnect: 'table',
      tcpdrop: 'table',
      tcplife: 'table',
      tcpretrans: 'table',
      threadsnoop: 'table',
      trace: 'table',
    });
  });

  it("a tool's form comes from its SPEC, without hidden options", async () => {
    const tools = (await loadCatalog()).flatMap((g) => g.tools);
    const exec = tools.find((t) => t.name === 'execsnoop')!;
    assert.deepEqual(exec.options![2], {
      flags: ['-x', '--fails'],
      name: 'fails',
      kind: 'flag',
      help: 'include failed exec()s',
    });
    assert.equal(exec.options!.find((o) => o.name === 'max_args')!.default, '20');
    assert.ok(!exec.options!.some((o) => o.flags.includes('--ebpf')));
    const bio = tools.find((t) => t.name === 'biolatency')!;
    assert.deepEqual(
      bio.options!.filter((o) => o.kind === 'positional').map((o) => [o.name, o.default, o.type]),
      [
        ['interval', '99999999', 'int'],
        ['count', '99999999', 'int'],
      ],
    );
  });
});

describe('bpfscope ui arguments', () => {
  it('defaults: loopback, a free port, 300 s idle timeout, unsafe off', () => {
    assert.deepEqual(parseUiArgs([]), {
      host: '127.0.0.1',
      port: 0,
      tokenFile: null,
      idleSeconds: 300,
      unsafe: false,
      help: false,
    });
    assert.deepEqual(parseUiArgs(['--listen', '[::1]:9000', '--idle-timeout=5', '--unsafe']), {
      host: '::1',
      port: 9000,
      tokenFile: null,
      idleSeconds: 5,
      unsafe: true,
      help: false,
    });
  });

  it('usage errors are one sentence with exit code 2', () => {
    const cases: [string[], string][] = [
      [['--listen', '9000'], "ui: --listen wants HOST:PORT (e.g. 127.0.0.1:9000, [::1]:9000), got '9000'"],
      [['--listen', 'h:70000'], "ui: --listen wants HOST:PORT (e.g. 127.0.0.1:9000, [::1]:9000), got 'h:70000'"],
      [['--idle-timeout', '0'], "ui: --idle-timeout wants seconds (0 < N <= 604800), got '0'"],
      [['--token-file'], 'ui: --token-file needs a value'],
      [['--nope'], "ui: unrecognized argument '--nope'"],
    ];
    for (const [argv, message] of cases) {
      assert.throws(
        () => parseUiArgs(argv),
        (e: any) => e.message === message && e.exitCode === 2,
        argv.join(' '),
      );
    }
  });

  it('loopback addresses', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', '::1', 'localhost']) assert.equal(isLoopback(h), true, h);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', '128.0.0.1', 'example.com']) assert.equal(isLoopback(h), false, h);
  });
});

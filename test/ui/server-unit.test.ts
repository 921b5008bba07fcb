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
    // available exactly when runTool runs it: every tool runTool runs has a view
    const available = tools.filter((t) => t.available).map((t) => t.name);
    assert.deepEqual(available.sort(), apiTools().sort());
    const view = Object.fromEntries(tools.filter((t) => t.available).map((t) => [t.name, t.view]));
    // every available tool has a view; the views of the tools runTool runs today (tools that join runTool later
    // get one too: asserted above)
    assert.ok(Object.values(view).every((v) => v !== undefined));
    const expected: Record<string, string> = {
      argdist: 'counts',
      bashreadline: 'table',
      biolatency: 'histogram',
      biopattern: 'counts',
      biosnoop: 'table',
      biotop: 'counts',
      bitesize: 'histogram',
      cachestat: 'counts',
      capable: 'table',
      cpudist: 'histogram',
      execsnoop: 'table',
      exitsnoop: 'table',
      ext4slower: 'table',
      filetop: 'counts',
      funccount: 'counts',
      funclatency: 'histogram',
      gethostlatency: 'table',
      hardirqs: 'histogram',
      killsnoop: 'table',
      llcstat: 'counts',
      offcputime: 'flame',
      offwaketime: 'flame',
      oomkill: 'table',
      opensnoop: 'table',
      pidpersec: 'counts',
      profile: 'flame',
      runqlat: 'histogram',
      runqlen: 'counts',
      runqslower: 'table',
      slabratetop: 'counts',
      softirqs: 'histogram',
      statsnoop: 'table',
      syncsnoop: 'table',
      syscount: 'counts',
      tcpaccept: 'table',
      tcpconnect: 'table',
      tcpdrop: 'table',
      tcplife: 'table',
      tcpretrans: 'table',
      threadsnoop: 'table',
      trace: 'table',
      vfsstat: 'counts',
      wakeuptime: 'flame',
    };
    for (const [name, v] of Object.entries(expected)) assert.equal(view[name], v, name);
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

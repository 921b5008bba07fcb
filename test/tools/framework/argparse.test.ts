/**
 * Option parsing and help text (src/tools/framework/argparse.ts) against Python's argparse: the fixture
 * test/tools/fixtures/bcc-help.json holds the `-h` output of each bcc tool's own parser (iovisor/bcc
 * tools/<tool>.py) printed by CPython 3.11 at 80 and 60 columns, and argparse's error messages for bad command
 * lines. When Debian's bpfcc-tools are installed, tools whose options are the same in that version are also
 * compared with the real `<tool>-bpfcc -h`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { formatHelp, HelpRequested, INT, type ParserSpec, parseArgs } from '../../../src/tools/framework/argparse.js';
import { repoRoot } from '../../helpers/cli.js';
import { assertUsageError } from '../argparse-fixture.js';

interface HelpFixture {
  width80: Record<string, string>;
  width60: Record<string, string>;
  errors: { tool: string; argv: string[]; status: number; stderr: string }[];
}

const fixture = JSON.parse(
  readFileSync(join(repoRoot(), 'test', 'tools', 'fixtures', 'bcc-help.json'), 'utf8'),
) as HelpFixture;

/** Tools whose parser is checked (the fixture also covers tools added later). */
export const TOOLS_WITH_BCC_PARSER = [
  'syscount',
  'opensnoop',
  'killsnoop',
  'statsnoop',
  'biolatency',
  'biosnoop',
  'runqlat',
  'cpudist',
  'hardirqs',
  'softirqs',
];

async function specOf(tool: string): Promise<ParserSpec> {
  return ((await import(`../../../src/tools/${tool}.js`)) as { SPEC: ParserSpec }).SPEC;
}

describe('help text equals argparse', () => {
  for (const tool of TOOLS_WITH_BCC_PARSER) {
    it(`${tool} -h at 80 columns`, async () => {
      assert.equal(formatHelp(await specOf(tool), 78), fixture.width80[tool]);
    });
    it(`${tool} -h at 60 columns`, async () => {
      assert.equal(formatHelp(await specOf(tool), 58), fixture.width60[tool]);
    });
  }
});

describe('usage errors equal argparse', () => {
  for (const c of fixture.errors) {
    it(`${c.tool} ${c.argv.join(' ')}`, async () => {
      assertUsageError(await specOf(c.tool), c);
    });
  }
});

describe('parsing', () => {
  const spec: ParserSpec = {
    prog: 't',
    options: [
      { flags: ['-T', '--timestamp'], kind: 'flag', help: 'ts' },
      { flags: ['-m', '--milliseconds'], kind: 'flag', help: 'ms' },
      { flags: ['-p', '--pid'], kind: 'value', type: INT, help: 'pid' },
      { flags: ['-f', '--flag_filter'], kind: 'append', help: 'flags' },
      { flags: ['--ebpf'], kind: 'flag', help: null },
      { flags: ['--exec'], kind: 'remainder', help: 'cmd' },
    ],
    positionals: [
      { name: 'interval', help: 'i', type: INT, default: 99999999 },
      { name: 'count', help: 'c', type: INT, default: 99999999 },
    ],
  };

  it('defaults', () => {
    assert.deepEqual(parseArgs(spec, []), {
      help: false,
      timestamp: false,
      milliseconds: false,
      pid: null,
      flag_filter: null,
      ebpf: false,
      exec: null,
      interval: 99999999,
      count: 99999999,
    });
  });

  it('clusters, attached values, long prefixes, appends, positionals in between', () => {
    const a = parseArgs(spec, ['-mT', '1', '-p181', '--flag=O_RDWR', '-f', 'O_WRONLY', '5', '--ebpf']);
    assert.equal(a.milliseconds, true);
    assert.equal(a.timestamp, true);
    assert.equal(a.pid, 181);
    assert.deepEqual(a.flag_filter, ['O_RDWR', 'O_WRONLY']);
    assert.equal(a.interval, 1);
    assert.equal(a.count, 5);
    assert.equal(a.ebpf, true);
  });

  it('a negative number is a value, -- ends options, --exec takes the rest', () => {
    assert.equal(parseArgs(spec, ['-p', '-5']).pid, -5);
    assert.equal(parseArgs(spec, ['--', '7']).interval, 7);
    assert.deepEqual(parseArgs(spec, ['-T', '--exec', 'ls', '-l', '/tmp']).exec, ['ls', '-l', '/tmp']);
  });

  it('-h wins and carries the help text', () => {
    assert.throws(
      () => parseArgs(spec, ['-T', '-h', '--bogus']),
      (e: unknown) => e instanceof HelpRequested && e.help.startsWith('usage: t [-h] [-T] [-m] [-p PID]'),
    );
  });

  it('hidden options stay out of usage and help', () => {
    const help = formatHelp(spec, 78);
    assert.ok(!help.includes('ebpf'));
    assert.match(
      help,
      /^usage: t \[-h\] \[-T\] \[-m\] \[-p PID\] \[-f FLAG_FILTER\] \[--exec \.\.\.\]\n {9}\[interval\] \[count\]\n/,
    );
  });
});

describe('the real bcc tools (Debian bpfcc-tools), when installed', () => {
  // Tools whose options did not change between Debian's bcc 0.26 and bcc HEAD.
  const same = ['runqlat', 'hardirqs', 'softirqs'];
  for (const tool of same) {
    const bin = `/usr/sbin/${tool}-bpfcc`;
    it(`${tool}: our help with prog ${tool}-bpfcc equals \`${tool}-bpfcc -h\``, async (t) => {
      if (!existsSync(bin)) {
        t.skip(`${bin} not installed (apt-get install bpfcc-tools)`);
        return;
      }
      const r = spawnSync(bin, ['-h'], { encoding: 'utf8', env: { ...process.env, COLUMNS: '80' } });
      const spec = { ...(await specOf(tool)), prog: `${tool}-bpfcc` };
      assert.equal(formatHelp(spec, 78), r.stdout);
    });
  }
});

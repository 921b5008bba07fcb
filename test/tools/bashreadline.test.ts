/**
 * bashreadline (src/tools/bashreadline.ts): bcc's -h text and usage errors (CPython argparse on bcc's parser, in
 * test/tools/fixtures/bcc-help-bashreadline-memleak.json), the traced symbol, header and rows, and a live run that
 * sees a line typed into an interactive bash on a pseudo-terminal (`script`).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { runTool } from '../../src/index.js';
import {
  type BashLineRow,
  buildProgram,
  DEFAULT_SHARED,
  formatRow,
  header,
  readlineSymbol,
  SPEC,
  toRow,
} from '../../src/tools/bashreadline.js';
import { parseArgs } from '../../src/tools/framework/argparse.js';
import { argparseFixtureTests, loadArgparseFixture } from './argparse-fixture.js';
import { liveSkipReason, runBpfscope, startBpfscope } from './helpers.js';
import { apiRows, jsonRows } from './jsonrun.js';

const fixture = loadArgparseFixture('bcc-help-bashreadline-memleak');

describe('bashreadline options (bcc tools/bashreadline.py)', () => {
  argparseFixtureTests(SPEC, 'bcc-help-bashreadline-memleak');

  it("-s [SHARED] is nargs='?': no -s, -s alone (the const), -s PATH, --shared=PATH", () => {
    const cases = fixture.parsed.filter((p) => p.tool === 'bashreadline');
    assert.equal(cases.length, 4);
    for (const c of cases) assert.equal(parseArgs(SPEC, c.argv).shared, c.args.shared, c.argv.join(' '));
    assert.equal(parseArgs(SPEC, ['-s']).shared, DEFAULT_SHARED);
  });
});

describe('bashreadline program and output', () => {
  it("traces readline_internal_teardown when .dynsym has it (Debian's bash), else readline", () => {
    const r = spawnSync('readelf', ['-W', '--dyn-syms', '/bin/bash'], { encoding: 'utf8' });
    const expected = / readline_internal_teardown$/m.test(r.stdout ?? '') ? 'readline_internal_teardown' : 'readline';
    assert.equal(readlineSymbol('/bin/bash'), expected);
    // A library without readline_internal_teardown in .dynsym: libc.
    const libc = readFileSync('/proc/self/maps', 'utf8').match(/\S*\/libc\.so\.6$/m)?.[0];
    if (libc) assert.equal(readlineSymbol(libc), 'readline');
  });

  it('a uretprobe on the symbol, non-NULL results of tasks named bash, 80 bytes of the line', () => {
    assert.equal(
      buildProgram('/bin/bash', 'readline'),
      'config = { max_map_keys = 10240 }\n' +
        'uretprobe:/bin/bash:readline /retval != 0 && comm == "bash"/ {\n' +
        '  printf("0\\x1f%u\\x1f%s\\n", pid, str(retval, 81));\n}\n',
    );
  });

  it('header and rows: "%-9s %-7d %s"', () => {
    assert.equal(header(), 'TIME      PID     COMMAND\n');
    const row = toRow({ kind: 'line', pid: 21176, command: 'ls -l' }, '05:28:25');
    assert.deepEqual(row, { time: '05:28:25', pid: 21176, command: 'ls -l' });
    assert.equal(formatRow(row), '05:28:25  21176   ls -l\n');
    assert.equal(formatRow(toRow({ kind: 'line', pid: 12345678, command: '' }, '05:28:25')), '05:28:25  12345678 \n');
  });

  it('a missing -s library is an error naming it (exit 1)', async () => {
    const r = await runBpfscope(['bashreadline', '-s', '/nonexistent/libreadline.so']);
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /\/nonexistent\/libreadline\.so: no such file/);
  });
});

function scriptSkipReason(): string | undefined {
  if (spawnSync('script', ['--version']).status !== 0) return 'script (util-linux) is not installed';
  return undefined;
}

describe('bashreadline on the live kernel', () => {
  const skip = liveSkipReason() ?? scriptSkipReason();

  it('prints the line typed into an interactive bash, with that shell PID', { skip }, async () => {
    const run = startBpfscope(['bashreadline']);
    assert.ok(await run.waitFor(/COMMAND\n/, 20_000), run.stderr());
    const marker = `bpfs_rl_${process.pid}_${Date.now()}`;
    const bashPid = String(await interactiveBash(marker));
    assert.ok(await run.waitFor(new RegExp(`^\\S+ +${bashPid} +exit$`, 'm'), 10_000), run.stdout());
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n');
    assert.equal(lines[0], 'TIME      PID     COMMAND');
    const mine = lines.filter((l) => l.includes(marker) || new RegExp(`^\\S+ +${bashPid} `).test(l));
    assert.deepEqual(
      mine.map((l) => l.slice(10)),
      [`${bashPid.padEnd(7)} echo ${marker}=$$`, `${bashPid.padEnd(7)} exit`],
      r.stdout,
    );
    for (const l of mine) assert.match(l, /^\d\d:\d\d:\d\d {2}/);
  });

  /** The facts the text test checks: the shell's two lines, with its PID. */
  function assertLines(rows: BashLineRow[], marker: string, bashPid: number): void {
    assert.deepEqual(
      rows.filter((r) => r.pid === bashPid).map((r) => r.command),
      [`echo ${marker}=$$`, 'exit'],
      JSON.stringify(rows),
    );
    for (const r of rows) assert.match(r.time, /^\d\d:\d\d:\d\d$/);
  }

  it('--json: the same two lines as objects', { skip }, async () => {
    const marker = `bpfs_rlj_${process.pid}_${Date.now()}`;
    let bashPid = 0;
    const rows = await jsonRows<BashLineRow>(
      ['bashreadline'],
      1,
      async () => {
        bashPid = await interactiveBash(marker);
      },
      (r) => r.some((x) => x.pid === bashPid && x.command === 'exit'),
    );
    assertLines(rows, marker, bashPid);
  });

  it('runTool: the same two lines as rows', { skip }, async () => {
    const marker = `bpfs_rla_${process.pid}_${Date.now()}`;
    const run = await runTool('bashreadline');
    const bashPid = await interactiveBash(marker);
    const rows = await apiRows(run, (r) => r.some((x) => x.pid === bashPid && x.command === 'exit'));
    assertLines(rows, marker, bashPid);
  });
});

/** Type `echo MARKER=$$` and `exit` into an interactive bash; resolves with the shell's PID. */
async function interactiveBash(marker: string): Promise<number> {
  // bash reads lines with readline only on a terminal: script(1) gives it a pseudo-terminal.
  const sh = spawn('script', ['-qec', 'bash --norc --noprofile -i', '/dev/null'], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, PS1: '$ ', TERM: 'dumb' },
  });
  let shOut = '';
  sh.stdout.on('data', (b: Buffer) => {
    shOut += b.toString();
  });
  const shDone = new Promise<number | null>((resolve) => sh.on('close', (c) => resolve(c)));
  // The command line names the shell's own PID in its output ($$ is expanded after readline returns it).
  sh.stdin.write(`echo ${marker}=$$\nexit\n`);
  sh.stdin.end();
  assert.equal(await shDone, 0, shOut);
  const bashPid = new RegExp(`^${marker}=(\\d+)\\r?$`, 'm').exec(shOut)?.[1];
  assert.ok(bashPid, shOut);
  return Number(bashPid);
}

/**
 * opensnoop (src/tools/opensnoop.ts): bcc's header and row formats, and live runs where the workload opens a
 * known file and a missing one (FD and ERR columns, -x, -n, -T/-U/-e columns).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pyFormat } from '../../src/tools/framework/pyformat.js';
import { formatRow as formatOpen, header, type RowOptions, toRow } from '../../src/tools/opensnoop.js';

/** The line of one record given as its fields in text (ts_us uid pid tid ret flags mode comm path), or null. */
function formatRow(f: string[], o: RowOptions, state: { initialTs: bigint | null }): string | null {
  const [ts, uid, pid, tid, ret, flags, mode, comm, path] = f as [string, ...string[]];
  const num = (t: string | undefined): number => Number(t);
  const rec = { kind: 'open' as const, tsUs: BigInt(ts), uid: num(uid), pid: num(pid), tid: num(tid), ret: num(ret) };
  const row = toRow({ ...rec, flags: num(flags), mode: num(mode), comm: comm!, path: path! }, o, state);
  return row && formatOpen(row, o);
}
import { workloadPath } from '../helpers/workload.js';
import { liveSkipReason, removeScratch, runBpfscope, tempDir } from './helpers.js';

const plain: RowOptions = { timestamp: false, printUid: false, tid: false, extended: false, failed: false, name: null };

describe('opensnoop output format (bcc tools/opensnoop.py)', () => {
  it('headers', () => {
    // "%-6s %-16s %4s %3s " % ("PID", "COMM", "FD", "ERR") + "PATH"
    assert.equal(header(plain), 'PID    COMM               FD ERR PATH\n');
    assert.equal(header({ ...plain, tid: true }), 'TID    COMM               FD ERR PATH\n');
    // "%-14s" TIME(s), "%-6s" UID, "%-8s %-4s " FLAGS MODE
    assert.equal(
      header({ ...plain, timestamp: true, printUid: true, extended: true }),
      'TIME(s)       UID   PID    COMM               FD ERR FLAGS    MODE PATH\n',
    );
  });

  it('rows: FD and ERR split, -T from the first event, -U, -e flags and mode', () => {
    const state = { initialTs: null as bigint | null };
    const o = { ...plain, timestamp: true, printUid: true, extended: true, machine: 'x64' };
    // fields: ts_us uid pid tid ret flags mode comm path
    assert.equal(
      formatRow(['1000000', '0', '181', '182', '3', '524288', '0', 'bash', '/etc/hosts'], o, state),
      '0.000000000   0     181    bash                3   0 02000000 n/a  /etc/hosts\n',
    );
    assert.equal(
      formatRow(['3500001', '1000', '181', '182', '-2', String(0o101), '420', 'bash', '/tmp/x'], o, state),
      '2.500001000   1000  181    bash               -1   2 00000101 0644 /tmp/x\n',
    );
    assert.equal(
      formatRow(['1', '0', '181', '182', '5', '0', '0', 'cat', 'f'], { ...plain, tid: true }, { initialTs: null }),
      '182    cat                 5   0 f\n',
    );
  });

  it('-x and -n filter in user space, as bcc does', () => {
    const state = { initialTs: null as bigint | null };
    assert.equal(formatRow(['1', '0', '1', '1', '3', '0', '0', 'bash', 'a'], { ...plain, failed: true }, state), null);
    assert.equal(
      formatRow(['1', '0', '1', '1', '3', '0', '0', 'bash', 'a'], { ...plain, name: 'sh' }, state),
      '1      bash                3   0 a\n',
    );
    assert.equal(formatRow(['1', '0', '1', '1', '3', '0', '0', 'bash', 'a'], { ...plain, name: 'zsh' }, state), null);
  });
});

describe('opensnoop on the live kernel', () => {
  const skip = liveSkipReason();
  let dir = '';
  let file = '';
  const missing = '/nonexistent/bpfscope-opensnoop';
  before(() => {
    dir = tempDir();
    file = join(dir, 'present.txt');
    writeFileSync(file, 'x');
  });
  after(() => removeScratch(dir));

  it('sees a known path with its FD and a missing path with ERR 2 (ENOENT)', { skip }, async () => {
    const r = await runBpfscope(['opensnoop', '--exec', workloadPath(), 'openat', file, '2', 'openat', missing, '1']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n');
    assert.equal(lines[0], 'PID    COMM               FD ERR PATH');
    const ok = lines.filter((l) => l.endsWith(` ${file}`));
    const bad = lines.filter((l) => l.endsWith(` ${missing}`));
    assert.equal(ok.length, 2, r.stdout);
    assert.equal(bad.length, 1, r.stdout);
    const pid = Number(ok[0]!.slice(0, 6));
    assert.equal(ok[0], pyFormat('%-6d %-16s %4d %3d %s', pid, 'bpfs_workload', 3, 0, file));
    assert.equal(bad[0], pyFormat('%-6d %-16s %4d %3d %s', pid, 'bpfs_workload', -1, 2, missing));
  });

  it('-x -n bpfs_wl: only the failed open of the renamed process', { skip }, async () => {
    const r = await runBpfscope([
      'opensnoop',
      '-x',
      '-n',
      'bpfs_wl',
      '--exec',
      workloadPath(),
      'comm',
      'bpfs_wl',
      'openat',
      file,
      '1',
      'openat',
      missing,
      '3',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout.split('\n').slice(1, -1);
    assert.equal(rows.length, 3, r.stdout);
    for (const row of rows) assert.match(row, new RegExp(`^\\d+ +bpfs_wl +-1   2 ${missing}$`));
  });

  it('-T -U -e: the extra columns', { skip }, async () => {
    const r = await runBpfscope(['opensnoop', '-TUe', '--exec', workloadPath(), 'openat', missing, '1']);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n');
    assert.equal(lines[0], 'TIME(s)       UID   PID    COMM               FD ERR FLAGS    MODE PATH');
    const row = lines.find((l) => l.endsWith(missing));
    assert.match(row ?? '', /^\d+\.\d{6}000 +0 {5}\d+ +bpfs_workload {6}-1 {3}2 00000000 n\/a {2}\/nonexistent/);
    // openat2's flags live in user memory: the note says why it is not traced with -e.
    if (/openat2/.test(r.stderr)) assert.match(r.stderr, /openat2\(\) calls are not traced with -e\/-f/);
  });

  it('-F fails with one sentence naming the missing features', { skip }, async () => {
    const r = await runBpfscope(['opensnoop', '-F']);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^ERROR: opensnoop: -F\/--full-path walks the dentries .* struct dereference and loops .*\n$/,
    );
  });

  it('a bad -f flag is rejected as bcc does', async () => {
    const r = await runBpfscope(['opensnoop', '-f', 'O_BOGUS']);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'Bad flag: O_BOGUS\n');
  });
});

/**
 * biotop (src/tools/biotop.ts): bcc's help and usage errors, the generated program, the screen format (heading,
 * rows, sort order, -r, -C), and live runs on a loop device the test creates: O_DIRECT reads of known sizes by
 * two workload processes, and -p PID keeping only one of them.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { runTool } from '../../src/index.js';
import type { MapDump } from '../../src/runtime/output/model.js';
import {
  type BiotopRow,
  buildProgram,
  collectRows,
  formatRow,
  formatScreen,
  SPEC,
  TABLE_HEADER,
} from '../../src/tools/biotop.js';
import { parseArgs } from '../../src/tools/framework/argparse.js';
import { CLEAR_SCREEN } from '../../src/tools/framework/top.js';
import { workloadPath } from '../helpers/workload.js';
import { argparseFixtureTests } from './argparse-fixture.js';
import { liveLoopDevice, runBpfscope, startBpfscope } from './helpers.js';

const LOOP0 = 7 * 2 ** 20;
const names = (d: number): string => (d === LOOP0 ? 'loop0' : d === 254 * 2 ** 20 ? 'vda' : '?');

function row(p: Partial<BiotopRow>): BiotopRow {
  return { pid: 100n, comm: 'dd', write: false, dev: LOOP0, io: 1n, bytes: 4096n, us: 1000n, ...p };
}

describe('biotop options (bcc tools/biotop.py argparse)', () => {
  argparseFixtureTests(SPEC, 'biotop-runqlen-argparse');

  it('defaults: 1 second, 99999999 outputs, 20 rows', () => {
    const a = parseArgs(SPEC, []);
    assert.deepEqual([a.interval, a.count, a.maxrows, a.pid, a.noclear], [1, 99999999, 20, null, false]);
  });
});

describe('biotop program', () => {
  it('records the submitter at block_io_start, the size at issue, sums at completion', () => {
    const p = buildProgram();
    assert.match(p, /tracepoint:block:block_io_start \{\n {2}@who\[args\.dev, args\.sector\] = \(pid, comm\);/);
    assert.match(
      p,
      /tracepoint:block:block_rq_issue \{\n {2}@start\[args\.dev, args\.sector\] = \(nsecs, args\.bytes\);/,
    );
    assert.match(p, /@bytes\[\$i\.0, \$i\.1, \$w, args\.dev\] = sum\(\$s\.1\);/);
    assert.match(p, /@lat\[\$i\.0, \$i\.1, \$w, args\.dev\] = stats\(\(nsecs - \$s\.0\) \/ 1000\);/);
    assert.ok(!p.includes('pid =='), p);
  });

  it('-p filters where the PID is recorded and again at completion (bcc FILTER_PID)', () => {
    const p = buildProgram({ pid: 181, startTracepoint: 'block_bio_queue' });
    assert.match(p, /tracepoint:block:block_bio_queue \/pid == 181\/ \{/);
    assert.match(p, /if \(\$i\.0 == 181\) \{\n {6}\$w = /);
  });
});

describe('biotop screen (bcc format)', () => {
  it('heading and rows: %-7d %-16s %1s %-3d %-3d %-8s %5s %7s %6.2f, Kbytes as a Python float', () => {
    assert.equal(TABLE_HEADER, 'PID     COMM             D MAJ MIN DISK       I/O  Kbytes  AVGms\n');
    assert.equal(
      formatRow(row({ pid: 14501n, comm: 'cksum', io: 361n, bytes: 29523968n, us: 1223790n }), names),
      '14501   cksum            R 7   0   loop0      361 28832.0   3.39\n',
    );
    assert.equal(
      formatRow(row({ pid: 0n, comm: '', write: true, dev: 8 * 2 ** 20 + 17, io: 3n, bytes: 4608n, us: 10n }), names),
      '0                        W 8   17  ?            3     4.5   0.00\n',
    );
  });

  it('sorted by bytes, largest first; -r limits rows; -C prints an empty line instead of clearing', () => {
    const rows = [
      row({ pid: 1n, bytes: 8192n }),
      row({ pid: 2n, bytes: 65536n, io: 2n, us: 3000n }),
      row({ pid: 3n, bytes: 4096n, write: true, dev: 254 * 2 ** 20 }),
    ];
    const now = new Date(2024, 0, 2, 8, 4, 11);
    const screen = formatScreen(rows, { noclear: true, maxrows: 20 }, names, now, '1.48 0.87 0.45 1/287 14547');
    assert.equal(
      screen,
      '\n08:04:11 loadavg: 1.48 0.87 0.45 1/287 14547\n\n' +
        'PID     COMM             D MAJ MIN DISK       I/O  Kbytes  AVGms\n' +
        '2       dd               R 7   0   loop0        2    64.0   1.50\n' +
        '1       dd               R 7   0   loop0        1     8.0   1.00\n' +
        '3       dd               W 254 0   vda          1     4.0   1.00\n',
    );
    const two = formatScreen(rows, { noclear: false, maxrows: 2 }, names, now, 'x');
    assert.ok(two.startsWith(`${CLEAR_SCREEN}08:04:11 loadavg: x\n\n`), JSON.stringify(two));
    assert.equal(two.split('\n').filter((l) => / dd /.test(l)).length, 2);
    // bcc prints a row before comparing with maxrows.
    assert.equal(formatScreen(rows, { noclear: true, maxrows: 0 }, names, now, 'x').split(' dd ').length - 1, 1);
    assert.equal(
      formatScreen([], { noclear: true, maxrows: 20 }, names, now, 'x').endsWith(
        'PID     COMM             D MAJ MIN DISK       I/O  Kbytes  AVGms\n',
      ),
      true,
    );
  });

  it('joins @lat (I/O count and µs total) and @bytes on (pid, comm, write, dev)', () => {
    const key = (pid: number, comm: string, w: number): MapDump['entries'][number]['key'] => [
      { kind: 'int', value: BigInt(pid), signed: false, size: 4 },
      { kind: 'string', value: comm },
      { kind: 'int', value: BigInt(w), signed: false, size: 8 },
      { kind: 'int', value: BigInt(LOOP0), signed: false, size: 4 },
    ];
    const dump = (entries: MapDump['entries']): MapDump => ({
      name: '@m',
      keyTypes: [],
      valueType: { kind: 'int', size: 8, signed: false } as never,
      entries,
    });
    const stats = (count: bigint, total: bigint) => ({ kind: 'stats' as const, count, total, signed: false });
    const sum = (value: bigint) => ({ kind: 'sum' as const, value, signed: false });
    const maps: Record<string, MapDump> = {
      lat: dump([
        { key: key(5, 'a', 0), value: stats(2n, 20n) },
        { key: key(5, 'a', 1), value: stats(1n, 30n) },
      ]),
      bytes: dump([
        { key: key(5, 'a', 1), value: sum(4096n) },
        { key: key(5, 'a', 0), value: sum(8192n) },
        // completed between the two reads: no count, dropped
        { key: key(6, 'b', 0), value: sum(512n) },
      ]),
    };
    const rows = collectRows({ readMap: (n: string) => maps[n]! });
    assert.deepEqual(
      rows.sort((x, y) => Number(x.write) - Number(y.write)),
      [
        { pid: 5n, comm: 'a', write: false, dev: LOOP0, io: 2n, bytes: 8192n, us: 20n },
        { pid: 5n, comm: 'a', write: true, dev: LOOP0, io: 1n, bytes: 4096n, us: 30n },
      ],
    );
  });
});

describe('biotop on the live kernel', () => {
  const { skip, device } = liveLoopDevice();
  let majMin = '';
  before(() => {
    if (skip) return;
    const [maj, min] = readFileSync(`/sys/block/${device().name}/dev`, 'utf8').trim().split(':');
    majMin = `${maj!.padEnd(3)} ${min!.padEnd(3)}`;
  });

  /** The table rows of `text` whose PID column is `pid`. */
  const rowsOf = (text: string, pid: number | undefined): string[] =>
    text.split('\n').filter((l) => l.startsWith(`${String(pid).padEnd(7)} `));

  it(
    '-C: two processes reading 4 x 64 KiB and 2 x 16 KiB, sorted by Kbytes; Ctrl-C prints and detaches',
    { skip },
    async () => {
      const run = startBpfscope(['biotop', '-C', '99']);
      assert.ok(await run.waitFor(/Hit Ctrl-C to end\n/, 20_000), run.stderr());
      const a = spawnSync(workloadPath(), ['comm', 'bpfs_bta', 'odirect-read', device().path, '4', '65536'], {
        encoding: 'utf8',
      });
      assert.equal(a.status, 0, a.stderr);
      const b = spawnSync(workloadPath(), ['comm', 'bpfs_btb', 'odirect-read', device().path, '2', '16384'], {
        encoding: 'utf8',
      });
      assert.equal(b.status, 0, b.stderr);
      run.child.kill('SIGINT');
      const r = await run.done;
      assert.equal(r.code, 0, r.stderr);
      assert.match(
        r.stdout,
        /^Tracing\.\.\. Output every 99 secs\. Hit Ctrl-C to end\n\n\d\d:\d\d:\d\d loadavg: [\d.]+ [\d.]+ [\d.]+ \d+\/\d+ \d+\n\nPID {5}COMM {13}D MAJ MIN DISK {7}I\/O {2}Kbytes {2}AVGms\n/,
      );
      assert.ok(r.stdout.endsWith('Detaching...\n'), r.stdout);
      const disk = device().name.padEnd(8);
      const ra = rowsOf(r.stdout, a.pid);
      const rb = rowsOf(r.stdout, b.pid);
      assert.equal(ra.length, 1, r.stdout);
      assert.equal(rb.length, 1, r.stdout);
      assert.match(ra[0]!, new RegExp(`^${a.pid} +bpfs_bta {9}R ${majMin} ${disk}     4   256\\.0 +\\d+\\.\\d\\d$`));
      assert.match(rb[0]!, new RegExp(`^${b.pid} +bpfs_btb {9}R ${majMin} ${disk}     2    32\\.0 +\\d+\\.\\d\\d$`));
      const lines = r.stdout.split('\n');
      assert.ok(lines.indexOf(ra[0]!) < lines.indexOf(rb[0]!), 'more Kbytes first');
    },
  );

  it('-p PID: only the I/O of that process', { skip }, async () => {
    const target = spawn(
      workloadPath(),
      ['comm', 'bpfs_btp', 'wait-stdin', 'odirect-read', device().path, '3', '8192'],
      {
        stdio: ['pipe', 'ignore', 'pipe'],
      },
    );
    const exited = new Promise<number | null>((res) => target.on('exit', (code) => res(code)));
    const run = startBpfscope(['biotop', '-C', '-p', String(target.pid), '99']);
    assert.ok(await run.waitFor(/Hit Ctrl-C to end\n/, 20_000), run.stderr());
    const other = spawnSync(workloadPath(), ['comm', 'bpfs_bto', 'odirect-read', device().path, '2', '65536'], {
      encoding: 'utf8',
    });
    assert.equal(other.status, 0, other.stderr);
    target.stdin!.end();
    assert.equal(await exited, 0);
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const table = r.stdout.slice(r.stdout.indexOf('AVGms\n') + 6).replace(/Detaching\.\.\.\n$/, '');
    const rows = table.split('\n').filter(Boolean);
    assert.equal(rows.length, 1, r.stdout);
    assert.match(
      rows[0]!,
      new RegExp(`^${target.pid} +bpfs_btp {9}R ${majMin} ${device().name.padEnd(8)}     3    24\\.0 +\\d+\\.\\d\\d$`),
    );
  });

  it('interval and count: "-C 1 2" prints two screens and exits by itself', { skip }, async () => {
    const r = await runBpfscope(['biotop', '-C', '1', '2']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.signal, null);
    assert.equal((r.stdout.match(/^\d\d:\d\d:\d\d loadavg: /gm) ?? []).length, 2, r.stdout);
    assert.equal((r.stdout.match(/^PID {5}COMM /gm) ?? []).length, 2, r.stdout);
    assert.ok(r.stdout.endsWith('Detaching...\n'), r.stdout);
  });

  it(
    'runTool -C 99: the reading process\'s row with 4 I/O and 256 KiB; --json "1 2": two screens',
    { skip },
    async () => {
      const run = await runTool('biotop', ['-C', '99']);
      const a = spawnSync(workloadPath(), ['comm', 'bpfs_btr', 'odirect-read', device().path, '4', '65536'], {
        encoding: 'utf8',
      });
      assert.equal(a.status, 0, a.stderr);
      await run.close();
      const ticks = [];
      for await (const t of run.intervals()) ticks.push(t);
      assert.equal(ticks.length, 1);
      const rows = ticks[0]!.rows.filter((r) => r.pid === BigInt(a.pid!));
      const [maj, min] = majMin.split(/ +/).map(Number);
      assert.deepEqual(
        rows.map((r) => [r.comm, r.write, r.major, r.minor, r.disk, r.io, r.bytes]),
        [['bpfs_btr', false, maj, min, device().name, 4n, 262144n]],
      );
      assert.match(ticks[0]!.loadavg, /^[\d.]+ [\d.]+ [\d.]+ \d+\/\d+ \d+$/);

      const j = await runBpfscope(['biotop', '--json', '1', '2']);
      assert.equal(j.code, 0, j.stderr);
      const screens = j.stdout.split('\n').filter(Boolean);
      assert.equal(screens.length, 2, j.stdout);
      for (const l of screens) assert.deepEqual(Object.keys(JSON.parse(l) as object), ['time', 'loadavg', 'rows']);
    },
  );
});

/**
 * The kprobe/fentry paths of vfsstat, filetop, ext4slower, cachestat and capable, run for real in Debian's 6.1
 * kernel under qemu (`../shared/tools/kernel-matrix/`; the development kernel has neither kprobes nor fentry),
 * with controlled workloads: the test workload (copied into the guest's work directory) and chown(1), on an ext4
 * file system made on a loop device inside the guest. Skips, saying why, without the guest tooling.
 *
 * The CLI is the one of this tree: `dist/src/cli/main.js` when the test runs from dist/, else `src/cli/main.ts`
 * through tsx.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { cliCommand, FROM_DIST, guestSkipReason, ROOT, runGuestScript } from './guest.js';
import { workloadPath } from '../helpers/workload.js';

/** The guest script: each section prints `=== NAME` then the tool's output, `=== end` at the end. */
function guestScript(work: string): string {
  const cli = cliCommand();
  const wl = `${work}/bpfs_workload`;
  // Start a tool in the background, wait for its header line, run the workload, then Ctrl-C it.
  const traced = (name: string, args: string, ready: string, body: string[]): string[] => [
    `echo "=== ${name}"`,
    `${cli} ${args} > ${work}/${name}.out 2> ${work}/${name}.err &`,
    'T=$!',
    `for i in $(seq 600); do grep -q '${ready}' ${work}/${name}.out 2>/dev/null && break; kill -0 $T || break; sleep 0.2; done`,
    ...body,
    'sleep 2; kill -INT $T; wait $T; echo "rc $?"',
    `cat ${work}/${name}.out ${work}/${name}.err`,
  ];
  return [
    'mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing',
    'modprobe ext4; modprobe loop',
    `cd ${work}`,
    `dd if=/dev/zero of=${work}/ext4.img bs=1M count=32 2>/dev/null`,
    `mkfs.ext4 -q -F ${work}/ext4.img && mkdir -p ${work}/mnt && mount -o loop ${work}/ext4.img ${work}/mnt`,
    `dd if=/dev/urandom of=${work}/mnt/data bs=4096 count=4 2>/dev/null; sync`,
    // vfsstat -p on a workload held at its first read(0) by a fifo (on the guest's tmpfs: 9p shares refuse
    // special files; the tool must not inherit the writer, fd 3): 500 reads, 300 writes and 2 opens once released
    // (its read(0) entered vfs_read before the tool attached).
    'echo "=== vfsstat"',
    `mkfifo /tmp/bpfs-vfsstat-fifo`,
    `${wl} wait-stdin read 500 4096 write 300 4096 < /tmp/bpfs-vfsstat-fifo & W=$!`,
    `exec 3> /tmp/bpfs-vfsstat-fifo`,
    `${cli} vfsstat -p $W 1 > ${work}/vfsstat.out 2>&1 3>&- & T=$!`,
    `for i in $(seq 600); do grep -q 'RMDIR/s' ${work}/vfsstat.out && break; kill -0 $T || break; sleep 0.2; done`,
    'exec 3>&-; wait $W; sleep 2; kill -INT $T; wait $T; echo "rc $?"',
    `cat ${work}/vfsstat.out`,
    ...traced('capable', 'capable -x', 'INSETID', [
      `touch ${work}/f1 ${work}/f2`,
      `chown 54321 ${work}/f1 ${work}/f2 & C=$!; wait $C; echo "chown $C"`,
    ]),
    ...traced('filetop', 'filetop -a -C -r 100000 60', 'Hit Ctrl-C', [
      `${wl} comm bpfs_ft read 7 4096 write 3 8192; echo "workload $?"`,
    ]),
    ...traced('ext4slower', 'ext4slower -j 0', 'ENDTIME_us', [
      `${wl} comm bpfs_e4 odirect-read ${work}/mnt/data 2 4096 fsync ${work}/mnt/data 2; echo "workload $?"`,
    ]),
    // --json prints no header: the run is ready once it holds its 8 links (4 kprobes, 4 kretprobes).
    'echo "=== ext4json"',
    `${cli} ext4slower --json --heatmap ${work}/ext4.svg 0 > ${work}/ext4json.out 2> ${work}/ext4json.err &`,
    'T=$!',
    'for i in $(seq 600); do [ "$(ls -l /proc/$T/fd 2>/dev/null | grep -c bpf_link)" -ge 8 ] && break; kill -0 $T || break; sleep 0.2; done',
    `${wl} comm bpfs_e4 odirect-read ${work}/mnt/data 2 4096 fsync ${work}/mnt/data 2; echo "workload $?"`,
    'sleep 2; kill -INT $T; wait $T; echo "rc $?"',
    `cat ${work}/ext4json.out ${work}/ext4json.err`,
    // runTool: attached when it resolves; the script runs the workload, closes the run and prints its rows.
    'echo "=== ext4api"',
    `${cli.replace(/ \S+$/, '')} ${work}/api.mjs ${API_MODULE} ${wl} ${work}/mnt/data`,
    'echo "=== cachestat"',
    `${cli} cachestat 1 3 2>&1 & T=$!`,
    'sleep 1; echo 3 > /proc/sys/vm/drop_caches; cat mnt/data > /dev/null; wait $T; echo "rc $?"',
    'umount mnt',
    'echo "=== end"',
  ].join('\n');
}

/** This tree's package entry (runTool) as the guest's node imports it: built, or the source through tsx. */
const API_MODULE = FROM_DIST ? `${ROOT}/dist/src/index.js` : `${ROOT}/src/index.ts`;

/** The runTool case: `node api.mjs MODULE WORKLOAD FILE` runs ext4slower 0 around the workload, prints its rows. */
const API_SCRIPT = `
import { spawnSync } from 'node:child_process';
const [mod, wl, file] = process.argv.slice(2);
const { runTool } = await import(mod);
const run = await runTool('ext4slower', ['0']);
const w = spawnSync(wl, ['comm', 'bpfs_e4', 'odirect-read', file, '2', '4096', 'fsync', file, '2']);
console.log('workload ' + w.status);
console.log('rc ' + (await run.close()));
for await (const r of run.rows()) console.log(JSON.stringify(r));
`;

/** The facts the -j text run gives, from rows (objects of --json or runTool): the workload's operations. */
function ext4Ops(rows: { comm: string; type: string; bytes: number; offset: number; file: string }[]): string[] {
  return rows.filter((r) => r.comm === 'bpfs_e4').map((r) => `${r.type} ${r.bytes} ${r.offset} ${r.file}`);
}

/** The JSON object lines of a section. */
function objects<T>(text: string): T[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as T);
}

function section(out: string, name: string): string {
  return new RegExp(`=== ${name}\\n([\\s\\S]*?)=== `).exec(out)?.[1] ?? '';
}

describe(
  'vfsstat, filetop, ext4slower, cachestat and capable on Debian 6.1 (kernel matrix)',
  { skip: guestSkipReason({ cli: 'this-tree', commands: { 'mkfs.ext4': 'e2fsprogs' } }) },
  () => {
    it('count and time the workload through kprobes/fentry', () => {
      const work = mkdtempSync('/tmp/kernel-matrix-fs-');
      try {
        copyFileSync(workloadPath(), join(work, 'bpfs_workload'));
        spawnSync('chmod', ['+x', join(work, 'bpfs_workload')]);
        writeFileSync(join(work, 'api.mjs'), API_SCRIPT);
        // BPFSCOPE_MATRIX_LOG=FILE keeps the guest's console (the tools' output) for reading.
        const out = runGuestScript([guestScript(work)], work);

        // vfsstat: every line of the -p run summed gives the workload's calls exactly.
        const v = section(out, 'vfsstat');
        assert.match(v, /rc 0\n/, v);
        assert.match(
          v,
          /^TIME {9}READ\/s {2}WRITE\/s {2}FSYNC\/s {3}OPEN\/s CREATE\/s UNLINK\/s {2}MKDIR\/s {2}RMDIR\/s$/m,
          v,
        );
        const rows = [...v.matchAll(/^\d\d:\d\d:\d\d: +(\d+) +(\d+) +(\d+) +(\d+)/gm)];
        assert.ok(rows.length >= 1, v);
        assert.equal(
          rows.reduce((a, m) => a + Number(m[1]), 0),
          500,
          v,
        );
        assert.equal(
          rows.reduce((a, m) => a + Number(m[2]), 0),
          300,
          v,
        );
        assert.equal(
          rows.reduce((a, m) => a + Number(m[4]), 0),
          2,
          v,
        );

        // capable on kprobe:cap_capable: two audited CAP_CHOWN checks of the chown process.
        const c = section(out, 'capable');
        const cpid = /^chown (\d+)$/m.exec(c)?.[1];
        assert.ok(cpid, c);
        assert.match(c, /rc 0\n/, c);
        const chowns = c
          .split('\n')
          .filter((l) => new RegExp(`^\\S+ +0 +${cpid} +${cpid} +chown +0 +CAP_CHOWN +1 +0$`).test(l));
        assert.equal(chowns.length, 2, c);

        // filetop on vfs_read/vfs_write: exact counts and bytes per file.
        const f = section(out, 'filetop');
        assert.match(f, /workload 0\n[\s\S]*rc 0\n/, f);
        const mine = f
          .split('\n')
          .filter((l) => / bpfs_ft /.test(l))
          .map((l) => l.replace(/^\d+ +/, '').replace(/ +/g, ' '))
          .sort();
        assert.deepEqual(mine, ['bpfs_ft 0 3 0 24 O null', 'bpfs_ft 7 0 28 0 O zero'], f);

        // ext4slower -j 0: opens, two 4 KiB O_DIRECT reads at offsets 0 and 4096, two fsyncs, all on "data".
        const e = section(out, 'ext4slower');
        assert.match(e, /workload 0\n[\s\S]*rc 0\n/, e);
        const ops = e
          .split('\n')
          .filter((l) => l.split(',')[1] === 'bpfs_e4')
          .map((l) => {
            const [, , , type, bytes, off, , file] = l.split(',');
            return `${type} ${bytes} ${off} ${file}`;
          });
        assert.deepEqual(
          ops,
          ['O 0 0 data', 'R 4096 0 data', 'R 4096 4096 data', 'O 0 0 data', 'S 0 0 data', 'S 0 0 data'],
          e,
        );

        // The same operations as --json objects and as runTool rows; the heat map drew every object of its run.
        const OPS = ['O 0 0 data', 'R 4096 0 data', 'R 4096 4096 data', 'O 0 0 data', 'S 0 0 data', 'S 0 0 data'];
        const ej = section(out, 'ext4json');
        assert.match(ej, /workload 0\n[\s\S]*rc 0\n/, ej);
        const e4rows = objects<{
          comm: string;
          type: string;
          bytes: number;
          offset: number;
          file: string;
          latencyUs: number;
        }>(ej);
        assert.deepEqual(ext4Ops(e4rows), OPS, ej);
        assert.ok(
          e4rows.every((r) => Number.isInteger(r.latencyUs) && r.latencyUs >= 0),
          ej,
        );
        const cells = [
          ...readFileSync(join(work, 'ext4.svg'), 'utf8').matchAll(/onmouseover="s\('[^']*','(\d+)-(\d+)us',(\d+),/g),
        ];
        assert.equal(
          cells.reduce((a, m) => a + Number(m[3]), 0),
          e4rows.length,
          ej,
        );
        const ea = section(out, 'ext4api');
        assert.match(ea, /^workload 0\nrc 0\n/, ea);
        assert.deepEqual(ext4Ops(objects(ea)), OPS, ea);

        // cachestat 1 3: the header, three rows, no "Detaching..." (the count ran out); the cold read missed.
        const s = section(out, 'cachestat');
        assert.match(
          s,
          /^ {4}HITS {3}MISSES {2}DIRTIES HITRATIO {3}BUFFERS_MB {2}CACHED_MB\n(( +\d+){3} +\d+\.\d\d% +\d+ +\d+\n){3}rc 0\n/m,
          s,
        );
        const misses = [...s.matchAll(/^ +\d+ +(\d+) +\d+ +\d+\.\d\d%/gm)].reduce((a, m) => a + Number(m[1]), 0);
        assert.ok(misses > 0, s);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    });
  },
);

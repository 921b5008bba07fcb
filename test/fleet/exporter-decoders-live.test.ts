/**
 * `bpfscope exporter` decoders on live kernel values: the test makes a cgroup v2 directory of its own, runs a private
 * copy of dd (its own command name) inside it, and the exporter's program counts that dd's write() calls by
 * `cgroup` (the cgroup v2 id): the `cgroup` decoder must turn the id into that directory's path, with the exact
 * count of writes. The cgroup v2 mount is found from /proc/self/mountinfo here too (/sys/fs/cgroup on a v2 host,
 * /sys/fs/cgroup/unified on a hybrid one such as this VM, whose v1 hierarchies hold other inode numbers).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe as suite, test } from 'node:test';
import { bpfscopeSkipReason, type RunningTool, startTool } from '../helpers/cli.js';

const COMM = `bpfs_cg${(process.pid % 0x10000).toString(16)}`;
const WRITES = 7;

function cgroup2Mount(): string | undefined {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep >= 0 && line.slice(sep + 3).startsWith('cgroup2 ')) return line.slice(0, sep).split(' ')[4];
  }
  return undefined;
}

const mount = cgroup2Mount();
const skip = bpfscopeSkipReason() ?? (mount ? undefined : 'no cgroup v2 mount');

suite('bpfscope exporter: decoders on live values', { skip }, () => {
  let dir = '';
  let cg = '';
  let exporter: RunningTool | undefined;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'bpfscope-exporter-dec-'));
    chmodSync(dir, 0o755);
    cg = join(mount!, `bpfscope-test-${process.pid}`);
    mkdirSync(cg);
    copyFileSync('/usr/bin/dd', join(dir, COMM));
    chmodSync(join(dir, COMM), 0o755);
    writeFileSync(
      join(dir, 'cg.yaml'),
      `metrics:
  counters:
    - name: cg_writes_total
      help: write() calls of the test workload by cgroup
      labels:
        - name: cgroup
          decoders:
            - name: cgroup
program: |
  tracepoint:syscalls:sys_enter_write /comm == "${COMM}"/ { @cg_writes_total[cgroup] = count(); }
`,
    );
  });

  after(async () => {
    if (exporter) {
      exporter.signal('SIGTERM');
      await exporter.done;
    }
    if (cg) rmdirSync(cg); // empty again: the workload has exited
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('cgroup: the id of a process in a cgroup of the test is decoded as that directory, count exact', async () => {
    exporter = startTool(
      'bpfscope',
      ['exporter', `--config.dir=${dir}`, '--config.names=cg', '--web.listen-address=127.0.0.1:0'],
      { timeoutMs: 240_000 },
    );
    assert.ok(await exporter.waitFor(/^Listening on /m, 120_000), exporter.stderr());
    const port = /Listening on 127\.0\.0\.1:(\d+)\/metrics/.exec(exporter.stderr())![1]!;
    // the shell moves itself into the cgroup, then becomes the workload: WRITES writes of one byte
    execFileSync('sh', [
      '-c',
      `echo $$ > ${cg}/cgroup.procs && exec ${join(dir, COMM)} if=/dev/zero of=/dev/null bs=1 count=${WRITES} status=none`,
    ]);
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const series = text.split('\n').filter((l) => l.startsWith('ebpf_exporter_cg_writes_total{'));
    assert.deepEqual(series, [`ebpf_exporter_cg_writes_total{cgroup="${cg}"} ${WRITES}`], text);
  });
});

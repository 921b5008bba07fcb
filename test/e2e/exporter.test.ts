/**
 * `bpfscope exporter` (issue 15 part 1) on the live kernel, checked by a real Prometheus: the test starts its own
 * `prometheus` process (a temp config and data dir, a free loopback port; never the Debian package's service),
 * scraping the exporter running the biolatency and syscalls examples plus a config that counts the writes of this
 * test's own workload. A private copy of dd (its own command name) makes N + M writes of 4096 bytes (M of them with
 * O_DIRECT to a file, so M block writes): Prometheus must then hold exactly N + M writes for that command, the
 * median write size in the bucket of 4096 ([4096, 8192): le 8191), and the examples' series with their labels.
 * Also: `promtool check metrics` on the exporter's output, OpenMetrics by content negotiation, and
 * `--config.check` on every example and on ten broken configs (one sentence naming the file and line, exit 1).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe as suite, test } from 'node:test';
import { bpfscopeSkipReason, repoRoot, type RunningTool, runTool, startTool } from '../helpers/cli.js';

function which(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

const skip =
  bpfscopeSkipReason() ??
  (which('prometheus') && which('promtool') ? undefined : 'prometheus/promtool not installed (apt prometheus)');
const EXAMPLES = join(repoRoot(), 'examples', 'exporter');
const COMM = `bpfs_x${(process.pid % 0x10000).toString(16)}`;
const N = 30; // writes to /dev/null
const M = 12; // O_DIRECT writes to a file

/** A free loopback TCP port (bound then released). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function waitUntil<T>(what: string, f: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

interface PromResult {
  metric: Record<string, string>;
  value: [number, string];
}

suite('bpfscope exporter', { skip }, () => {
  let dir = '';
  let exporter: RunningTool | undefined;
  let prom: ChildProcess | undefined;
  let promExit: Promise<unknown> | undefined;
  let exporterUrl = '';
  let promUrl = '';

  async function query(q: string): Promise<PromResult[]> {
    const r = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`);
    const j = (await r.json()) as { status: string; data: { result: PromResult[] } };
    assert.equal(j.status, 'success', q);
    return j.data.result;
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bpfscope-exporter-'));
    chmodSync(dir, 0o755);
    const cfg = join(dir, 'configs');
    mkdirSync(cfg);
    for (const f of ['biolatency.yaml', 'biolatency.bt', 'syscalls.yaml', 'syscalls.bt']) {
      copyFileSync(join(EXAMPLES, f), join(cfg, f));
    }
    writeFileSync(
      join(cfg, 'wl.yaml'),
      `metrics:
  counters:
    - name: wl_writes_total
      help: write() calls of the test workload
      labels:
        - name: comm
          decoders:
            - name: string
  histograms:
    - name: wl_write_bytes
      help: write() sizes of the test workload
      bucket_type: exp2
      bucket_min: 0
      bucket_max: 20
      labels:
        - name: comm
          decoders:
            - name: string
program: |
  BEGIN { @wl_started = 1; }
  tracepoint:syscalls:sys_enter_write /comm == "${COMM}"/ {
    @wl_writes_total[comm] = count();
    @wl_write_bytes[comm] = hist(args.count);
  }
`,
    );
    writeFileSync(
      join(cfg, 'guard.yaml'),
      `metrics:
  counters:
    - name: guard_writes_total
      help: write() calls of the test workload by size, at most 3 sizes
      max_series: 3
      labels:
        - name: bytes
          decoders:
            - name: uint
program: |
  tracepoint:syscalls:sys_enter_write /comm == "${COMM}"/ { @guard_writes_total[args.count] = count(); }
`,
    );
    copyFileSync('/usr/bin/dd', join(dir, COMM));
    chmodSync(join(dir, COMM), 0o755);

    exporter = startTool(
      'bpfscope',
      [
        'exporter',
        `--config.dir=${cfg}`,
        '--config.names=biolatency,syscalls,wl,guard',
        '--web.listen-address=127.0.0.1:0',
      ],
      { timeoutMs: 300_000 },
    );
    assert.ok(await exporter.waitFor(/^Listening on /m, 120_000), exporter.stderr());
    const port = /Listening on 127\.0\.0\.1:(\d+)\/metrics/.exec(exporter.stderr())![1]!;
    exporterUrl = `http://127.0.0.1:${port}/metrics`;

    const promPort = await freePort();
    promUrl = `http://127.0.0.1:${promPort}`;
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: bpfscope\n    static_configs:\n      - targets: ['127.0.0.1:${port}']\n`,
    );
    prom = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${promPort}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let promErr = '';
    prom.stderr!.on('data', (b: Buffer) => (promErr += b.toString()));
    promExit = new Promise((r) => prom!.once('exit', r));
    await waitUntil(`prometheus ready (${promErr.slice(-500)})`, async () => {
      const r = await fetch(`${promUrl}/-/ready`);
      return r.ok ? true : undefined;
    });
    // the exporter is up: wait for Prometheus's first successful scrape of it
    await waitUntil('a scrape', async () => {
      const r = await query('up{job="bpfscope"} == 1');
      return r.length === 1 ? true : undefined;
    });

    // the workload: N writes to /dev/null, M O_DIRECT writes to a file on a block device
    const wl = join(dir, COMM);
    execFileSync(wl, ['if=/dev/zero', 'of=/dev/null', 'bs=4096', `count=${N}`, 'status=none']);
    execFileSync(wl, [
      'if=/dev/zero',
      `of=${join(dir, 'direct.out')}`,
      'bs=4096',
      `count=${M}`,
      'oflag=direct',
      'status=none',
    ]);
  });

  after(async () => {
    if (prom && prom.exitCode === null) {
      prom.kill('SIGTERM');
      await promExit;
    }
    if (exporter) {
      exporter.signal('SIGTERM');
      await exporter.done;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('Prometheus holds the workload counter exactly, with its label', async () => {
    const r = await waitUntil(`wl_writes_total = ${N + M}`, async () => {
      const res = await query(`ebpf_exporter_wl_writes_total{comm="${COMM}"}`);
      return res[0]?.value[1] === String(N + M) ? res : undefined;
    });
    assert.equal(r.length, 1);
    assert.deepEqual(r[0]!.metric, {
      __name__: 'ebpf_exporter_wl_writes_total',
      comm: COMM,
      instance: new URL(exporterUrl).host,
      job: 'bpfscope',
    });
  });

  test('histogram_quantile lands in the bucket of the write size (4096 in [4096, 8192): le 8191)', async () => {
    const buckets = await waitUntil('wl_write_bytes count', async () => {
      const res = await query(`ebpf_exporter_wl_write_bytes_bucket{comm="${COMM}"}`);
      const inf = res.find((x) => x.metric.le === '+Inf');
      return inf?.value[1] === String(N + M) ? res : undefined;
    });
    const byLe = new Map(buckets.map((b) => [b.metric.le, b.value[1]]));
    assert.equal(byLe.get('4095'), '0');
    assert.equal(byLe.get('8191'), String(N + M));
    assert.equal(byLe.get('2097151'), String(N + M));
    const q = await query(`histogram_quantile(0.5, ebpf_exporter_wl_write_bytes_bucket{comm="${COMM}"})`);
    const v = Number(q[0]!.value[1]);
    assert.ok(v > 4095 && v <= 8191, `median ${v}`);
  });

  test('the examples: syscalls by name and block I/O latency by device and operation', async () => {
    const w = await waitUntil('syscalls_total{syscall="write"}', async () => {
      const res = await query('ebpf_exporter_syscalls_total{syscall="write"}');
      return res.length === 1 && Number(res[0]!.value[1]) >= N + M ? res : undefined;
    });
    assert.equal(w[0]!.metric.syscall, 'write');
    const disks = new Set(
      readFileSync('/proc/partitions', 'utf8')
        .split('\n')
        .slice(2)
        .map((l) => l.trim().split(/\s+/)[3])
        .filter(Boolean),
    );
    const bio = await waitUntil('bio_latency_seconds_count', async () => {
      const res = await query('ebpf_exporter_bio_latency_seconds_count{operation="write"}');
      return res.some((x) => Number(x.value[1]) >= M) ? res : undefined;
    });
    for (const s of bio) assert.ok(disks.has(s.metric.device!), `device ${s.metric.device} in /proc/partitions`);
    const q = await query('histogram_quantile(0.5, ebpf_exporter_bio_latency_seconds_bucket{operation="write"})');
    for (const s of q) {
      const v = Number(s.value[1]);
      assert.ok(v > 0 && v < 1000, `bio median ${v}`);
    }
    const enabled = await query('ebpf_exporter_enabled_configs');
    assert.deepEqual(enabled.map((x) => x.metric.name).sort(), ['biolatency', 'guard', 'syscalls', 'wl']);
  });

  test('promtool check metrics passes; OpenMetrics by content negotiation', async () => {
    const text = await (await fetch(exporterUrl)).text();
    const lint = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(lint.status, 0, lint.stdout + lint.stderr);
    const om = await fetch(exporterUrl, { headers: { Accept: 'application/openmetrics-text; version=1.0.0' } });
    assert.equal(om.headers.get('content-type'), 'application/openmetrics-text; version=1.0.0; charset=utf-8');
    const body = await om.text();
    assert.ok(body.endsWith('# EOF\n'));
    assert.match(body, /^# TYPE ebpf_exporter_wl_writes counter$/m);
    assert.match(body, new RegExp(`^ebpf_exporter_wl_writes_total\\{comm="${COMM}"\\} ${N + M}$`, 'm'));
    const plain = await fetch(exporterUrl);
    assert.equal(plain.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
  });

  test('max_series: an LRU map of that size in the kernel, evictions counted', async () => {
    // the map's kernel name is AT_ and the first 12 characters of its name (codegen/maps.ts)
    const maps = JSON.parse(execFileSync('bpftool', ['-j', 'map', 'show'], { encoding: 'utf8' })) as {
      name?: string;
      type: string;
      max_entries: number;
    }[];
    const guard = maps.filter((m) => m.name === 'AT_guard_writes');
    assert.deepEqual(
      guard.map((m) => [m.type, m.max_entries]),
      [['lru_percpu_hash', 3]],
    );
    // 8 sizes, each written once (the sizes written before are counted too: 4096), a scrape after each
    const seen = new Set<string>();
    const series = (text: string): string[] =>
      [...text.matchAll(/^ebpf_exporter_guard_writes_total\{bytes="(\d+)"\} \d+$/gm)].map((m) => m[1]!);
    for (let size = 1; size <= 8; size++) {
      execFileSync(join(dir, COMM), ['if=/dev/zero', 'of=/dev/null', `bs=${size}`, 'count=1', 'status=none']);
      for (const s of series(await (await fetch(exporterUrl)).text())) seen.add(s);
    }
    const text = await (await fetch(exporterUrl)).text();
    const last = series(text);
    assert.ok(last.length >= 1 && last.length <= 3, text);
    const evicted = Number(
      /^ebpf_exporter_evicted_series_total\{config="guard",metric="guard_writes_total"\} (\d+)$/m.exec(text)![1],
    );
    // every size seen at one of these scrapes and gone at the last was counted (Prometheus's scrapes may count more)
    assert.ok(evicted >= seen.size - last.length && evicted <= 9, `evicted ${evicted}, seen ${seen.size}`);
    assert.ok(seen.size - last.length >= 1, `seen ${[...seen].join(',')}`);
  });

  test('ebpf_program_attached: 1 for a probe attached by a link, 0 for BEGIN (run once, never attached)', async () => {
    const text = await (await fetch(exporterUrl)).text();
    const wl = [
      ...text.matchAll(/^ebpf_exporter_ebpf_program_info\{config="wl",program="([^"]+)",[^}]*id="(\d+)"\} 1$/gm),
    ];
    const attached = (id: string): string | undefined =>
      new RegExp(`^ebpf_exporter_ebpf_program_attached\\{id="${id}"\\} (\\d+)$`, 'm').exec(text)?.[1];
    assert.deepEqual(
      wl.map((m) => [m[1], attached(m[2]!)]),
      [
        ['begin_0', '0'],
        ['sys_enter_w_1', '1'],
      ],
      text,
    );
    // the same answer as bpftool's list of links, for every program of every config
    const links = JSON.parse(execFileSync('bpftool', ['-j', 'link', 'show'], { encoding: 'utf8' })) as {
      prog_id: number;
    }[];
    const linked = new Set(links.map((l) => String(l.prog_id)));
    const all = [...text.matchAll(/^ebpf_exporter_ebpf_program_attached\{id="(\d+)"\} (\d+)$/gm)];
    assert.equal(all.length, 6, text); // biolatency 2, syscalls 1, wl 2, guard 1
    for (const [, id, v] of all) assert.equal(v, linked.has(id!) ? '1' : '0', `program ${id}`);
  });

  test('SIGTERM: exit 0, its programs gone', async () => {
    const text = await (await fetch(exporterUrl)).text();
    const ids = [...text.matchAll(/^ebpf_exporter_ebpf_program_info\{[^}]*id="(\d+)"\} 1$/gm)].map((m) => m[1]!);
    assert.equal(ids.length, 6, text); // biolatency 2, syscalls 1, wl 2 (BEGIN and the tracepoint), guard 1
    exporter!.signal('SIGTERM');
    const r = await exporter!.done;
    assert.equal(r.code, 0, r.stderr);
    for (const id of ids) {
      assert.notEqual(spawnSync('bpftool', ['prog', 'show', 'id', id]).status, 0, `program ${id} still loaded`);
    }
  });
});

suite('bpfscope exporter --config.check', { skip: bpfscopeSkipReason() }, () => {
  let dir = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'bpfscope-exporter-check-'));
    chmodSync(dir, 0o755);
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('every example passes', async () => {
    const names = ['biolatency', 'syscalls', 'runqlat', 'tcpretrans', 'oomkill', 'cachestat'];
    const r = await runTool(
      'bpfscope',
      ['exporter', `--config.dir=${EXAMPLES}`, `--config.names=${names.join(',')}`, '--config.check'],
      {
        timeoutMs: 120_000,
      },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.split('\n').filter((l) => / ok /.test(l)).length, names.length, r.stdout);
  });

  const counter = (labels: string, extra = ''): string =>
    `metrics:\n  counters:\n    - name: c_total\n      help: a counter\n${extra}${labels}`;
  const commLabel = '      labels:\n        - name: comm\n          decoders:\n            - name: string\n';
  const prog = (p: string): string => `program: |\n  ${p}\n`;
  const ok = 'tracepoint:syscalls:sys_enter_write { @c_total[comm] = count(); }';

  // [name, yaml, .bt or undefined, expected stderr]
  const broken: [string, string, string | undefined, (d: string) => string][] = [
    ['bad-yaml', 'metrics:\n  counters:\n    - name: [x\n', undefined, (d) => `${d}/bad-yaml.yaml:4: bad YAML: `],
    [
      'unknown-decoder',
      counter(commLabel.replace('name: string', 'name: strang')) + prog(ok),
      undefined,
      (d) => `${d}/unknown-decoder.yaml:8: unknown decoder in metrics.counters.0.labels.0.decoders.0.name`,
    ],
    [
      'size-mismatch',
      counter(commLabel.replace('- name: comm\n', '- name: comm\n          size: 4\n')) + prog(ok),
      undefined,
      (d) =>
        `${d}/size-mismatch.yaml:6: label "comm" has size 4 but key element 1 of @c_total (string[16]) has 16 bytes`,
    ],
    [
      'no-compile',
      counter(commLabel),
      'tracepoint:syscalls:sys_enter_write {\n  @c_total[comm] = count(;\n}\n',
      (d) => `${d}/no-compile.bt:2: the program does not compile: `,
    ],
    [
      'label-count',
      counter('') + prog(ok),
      undefined,
      (d) => `${d}/label-count.yaml:3: metric "c_total" has 0 label(s) but map @c_total has 1 key(s): [string[16]]`,
    ],
    [
      'missing-map',
      counter(commLabel, '      map: "@other"\n') + prog(ok),
      undefined,
      (d) => `${d}/missing-map.yaml:3: metric "c_total" reads map @other, which the program does not have`,
    ],
    [
      'unsupported-key',
      counter(commLabel, '      perf_event_array: true\n') + prog(ok),
      undefined,
      (d) =>
        `${d}/unsupported-key.yaml:5: "perf_event_array" is an ebpf_exporter key bpfscope does not support: counters are read from maps only; count in a map with count()`,
    ],
    [
      'bad-bucket-type',
      'metrics:\n  histograms:\n    - name: h\n      help: a histogram\n      bucket_type: exp3\n' +
        prog('BEGIN { @h = hist(1); }'),
      undefined,
      (d) =>
        `${d}/bad-bucket-type.yaml:5: metrics.histograms.0.bucket_type must be one of: exp2, exp2zero, linear, fixed`,
    ],
    [
      'hist-type',
      'metrics:\n  histograms:\n    - name: h\n      help: a histogram\n      bucket_type: linear\n' +
        prog('BEGIN { @h = hist(1); }'),
      undefined,
      (d) => `${d}/hist-type.yaml:3: bucket_type linear reads an lhist() map, but @h is a hist()`,
    ],
    [
      'unsafe',
      counter(commLabel) + prog('tracepoint:syscalls:sys_enter_write { system("id"); @c_total[comm] = count(); }'),
      undefined,
      (d) => `${d}/unsafe.yaml:10: the program does not compile: `,
    ],
  ];

  for (const [name, yaml, bt, expected] of broken) {
    test(`broken config: ${name}`, async () => {
      writeFileSync(join(dir, `${name}.yaml`), yaml);
      if (bt !== undefined) writeFileSync(join(dir, `${name}.bt`), bt);
      const r = await runTool(
        'bpfscope',
        ['exporter', `--config.dir=${dir}`, `--config.names=${name}`, '--config.check'],
        {
          timeoutMs: 60_000,
        },
      );
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stdout, '');
      const want = `ERROR: ${expected(dir)}`;
      assert.ok(r.stderr.startsWith(want), `${r.stderr}\n--- expected to start with ---\n${want}`);
      assert.doesNotMatch(r.stderr, /internal error|\n {4}at /);
    });
  }

  test('a world-writable config is warned about', async () => {
    writeFileSync(join(dir, 'ww.yaml'), counter(commLabel) + prog(ok));
    chmodSync(join(dir, 'ww.yaml'), 0o666);
    const r = await runTool('bpfscope', ['exporter', `--config.dir=${dir}`, '--config.names=ww', '--config.check'], {
      timeoutMs: 60_000,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`^WARNING: ${dir}/ww\\.yaml is world-writable: `, 'm'));
  });
});

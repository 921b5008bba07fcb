/**
 * The deployment files of examples/agent/, checked without a cluster: the systemd unit passes `systemd-analyze
 * verify` (when installed) and grants exactly the documented capabilities; the DaemonSet runs in the host PID
 * namespace with those capabilities after dropping all, and passes the agent a metrics address; the Containerfile
 * starts the agent; the Grafana dashboard is valid JSON whose every query names a metric the agent serves or one
 * of the exporter's example configs defines (ebpf_exporter_ + the YAML's metric name).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe as suite, test } from 'node:test';
import { repoRoot } from '../helpers/cli.js';

const dir = join(repoRoot(), 'examples', 'agent');
const read = (f: string) => readFileSync(join(dir, f), 'utf8');
const CAPS = ['BPF', 'PERFMON', 'SYS_RESOURCE', 'SYS_PTRACE', 'DAC_READ_SEARCH'];

/** Metrics the agent serves (docs/fleet-agent.md's table; src/fleet/agent/main.ts). */
const AGENT_METRICS = [
  'bpfscope_agent_periods_total',
  'bpfscope_agent_samples_total',
  'bpfscope_agent_processes',
  'bpfscope_agent_stack_map_full_total',
  'bpfscope_agent_late_periods_total',
  'bpfscope_agent_profiles_sent_total',
  'bpfscope_agent_push_failures_total',
  'bpfscope_agent_profiles_dropped_total',
  'bpfscope_agent_queue_profiles',
  'process_cpu_seconds_total',
  'process_resident_memory_bytes',
];

/** The exporter's example metrics and built-ins (examples/exporter/*.yaml, with ebpf_exporter_ and _bucket). */
const EXPORTER_METRICS = [
  'ebpf_exporter_syscalls_total',
  'ebpf_exporter_bio_latency_seconds_bucket',
  'ebpf_exporter_run_queue_latency_seconds_bucket',
  'ebpf_exporter_tcp_retransmits_total',
  'ebpf_exporter_oom_kills_total',
  'ebpf_exporter_page_cache_ops_total',
  'ebpf_exporter_ebpf_program_run_time_seconds',
];

suite('examples/agent deployment files', () => {
  test('the systemd unit: verified by systemd-analyze, the documented capabilities only', (t) => {
    const unit = read('bpfscope-agent.service');
    const caps = (key: string) =>
      new RegExp(`^${key}=(.*)$`, 'm')
        .exec(unit)![1]!
        .split(/\s+/)
        .map((c) => c.replace(/^CAP_/, ''));
    assert.deepEqual(caps('CapabilityBoundingSet'), CAPS);
    assert.deepEqual(caps('AmbientCapabilities'), CAPS);
    assert.match(unit, /^ExecStart=.*bpfscope agent .*--metrics-address=127\.0\.0\.1:9436/m);
    assert.match(unit, /^NoNewPrivileges=yes$/m);
    if (spawnSync('systemd-analyze', ['--version']).status !== 0) {
      t.skip('systemd-analyze not installed');
      return;
    }
    const tmp = mkdtempSync(join(tmpdir(), 'bpfscope-unit-'));
    try {
      copyFileSync(join(dir, 'bpfscope-agent.service'), join(tmp, 'bpfscope-agent.service'));
      const r = spawnSync('systemd-analyze', ['verify', join(tmp, 'bpfscope-agent.service')], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stderr.trim(), '', r.stderr);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  test('the DaemonSet: host PID namespace, all capabilities dropped then the documented ones added', () => {
    const y = read('daemonset.yaml');
    assert.match(y, /^kind: DaemonSet$/m);
    assert.match(y, /^ {6}hostPID: true$/m);
    assert.match(y, /drop: \[["']ALL["']\]/);
    const add = /add: \[([^\]]*)\]/
      .exec(y)![1]!
      .split(',')
      .map((s) => s.trim().replace(/["']/g, ''));
    assert.deepEqual(add, CAPS);
    assert.match(y, /privileged: false/);
    assert.match(y, /- --metrics-address=\$\(POD_IP\):9436/);
    assert.match(y, /containerPort: 9436/);
    assert.doesNotMatch(y, /\t/, 'YAML has no tabs');
  });

  test('the Containerfile starts the agent from the built CLI', () => {
    const c = read('Containerfile');
    assert.match(c, /^ENTRYPOINT \["node", "\/opt\/bpfscope\/dist\/src\/cli\/main\.js", "agent"\]$/m);
    assert.ok(existsSync(join(repoRoot(), 'src', 'cli', 'main.ts')));
  });

  test('the Grafana dashboard queries only metrics that exist', () => {
    const d = JSON.parse(read('grafana-dashboard.json')) as {
      panels: { type: string; targets?: { expr: string }[] }[];
    };
    const known = new Set([...AGENT_METRICS, ...EXPORTER_METRICS]);
    const used = new Set<string>();
    for (const p of d.panels) {
      for (const t of p.targets ?? []) {
        for (const m of t.expr.matchAll(/\b([a-z_]+)\{/g)) {
          if (['by', 'sum', 'rate', 'increase', 'topk', 'histogram_quantile'].includes(m[1]!)) continue;
          used.add(m[1]!);
        }
      }
    }
    for (const m of used) assert.ok(known.has(m), `the dashboard queries ${m}`);
    assert.ok(used.size >= 12, [...used].join(' '));
    // the exporter's metric names follow its example configs
    const exporterDir = join(repoRoot(), 'examples', 'exporter');
    if (existsSync(exporterDir)) {
      for (const m of EXPORTER_METRICS.filter((x) => x !== 'ebpf_exporter_ebpf_program_run_time_seconds')) {
        const name = m.replace(/^ebpf_exporter_/, '').replace(/_bucket$/, '');
        const found = spawnSync('grep', ['-rl', `name: ${name}$`, exporterDir], { encoding: 'utf8' });
        assert.equal(found.status, 0, `no example config defines ${name}`);
      }
    }
  });
});

/**
 * `bpfscope agent` without the kernel: usage errors are one sentence and exit status 2 (nothing is loaded), `--help`
 * lists the flags, the metrics are valid text format, and the messages the agent encodes decode with the test's own
 * wire reader as the published .proto files define them.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe as suite, test } from 'node:test';
import { parseListenAddress, renderMetrics } from '../../src/fleet/agent/metrics.js';
import { grpcFrame, parcaWriteRawRequest, pyroscopePushRequest } from '../../src/fleet/agent/proto.js';
import { containerIdOf, cgroupPath } from '../../src/fleet/agent/procinfo.js';
import { bpfscopeEntry } from '../helpers/cli.js';
import { fields, messages, stringField } from '../helpers/protowire.js';

function agent(...args: string[]) {
  return spawnSync(process.execPath, [bpfscopeEntry(), 'agent', ...args], { encoding: 'utf8' });
}

suite('bpfscope agent arguments', () => {
  for (const [args, message] of [
    [[], 'give a backend: --pyroscope URL or --parca URL'],
    [['--pyroscope', 'pyroscope:4040'], '--pyroscope needs an http:// or https:// URL, not "pyroscope:4040"'],
    [['--parca=http://p:7070', '--hz', '100'], '--hz must be an integer from 19 to 99, not "100"'],
    [['--parca=http://p:7070', '--period', '500ms'], '--period must be at least 1s'],
    [
      ['--parca=http://p:7070', '--period', 'soon'],
      '--period must be a duration such as 15s, 1m or 1500ms, not "soon"',
    ],
    [
      ['--parca=http://p:7070', '--label', '__name__=x'],
      '--label must be NAME=VALUE with a label name ([a-zA-Z_][a-zA-Z0-9_]*), not "__name__=x"',
    ],
    [
      ['--parca=http://p:7070', '--metrics-address', '9436'],
      '--metrics-address must be HOST:PORT (e.g. 127.0.0.1:9436), not "9436"',
    ],
    [['--parca=http://p:7070', '--frobnicate'], "Unknown option '--frobnicate'"],
  ] as const) {
    test(`${args.join(' ') || '(none)'}: ${message}`, () => {
      const r = agent(...args);
      assert.equal(r.status, 2);
      assert.equal(r.stdout, '');
      const lines = r.stderr.split('\n');
      assert.ok(lines[0]!.startsWith('bpfscope agent: '), r.stderr);
      assert.ok(lines[0]!.includes(message), r.stderr);
      assert.equal(lines[1], 'usage: bpfscope agent (--pyroscope URL | --parca URL)... [options]');
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    });
  }

  test('--help lists the flags and exits 0', () => {
    const r = agent('--help');
    assert.equal(r.status, 0);
    for (const f of [
      '--pyroscope URL',
      '--parca URL',
      '--hz N',
      '--period DURATION',
      '--queue-size N',
      '--metrics-address H:P',
    ]) {
      assert.ok(r.stdout.includes(f), f);
    }
    assert.match(r.stdout, /default 127\.0\.0\.1:9436/);
  });

  test('the metrics address defaults to loopback', () => {
    assert.deepEqual(parseListenAddress(':9436'), { host: '127.0.0.1', port: 9436 });
    assert.deepEqual(parseListenAddress('[::1]:1'), { host: '::1', port: 1 });
    assert.deepEqual(parseListenAddress('0.0.0.0:9436'), { host: '0.0.0.0', port: 9436 });
  });
});

suite('agent wire formats', () => {
  const labels = [
    { name: '__name__', value: 'process_cpu' },
    { name: 'service_name', value: 'web-1' },
  ];
  const profile = Uint8Array.from([0x1f, 0x8b, 1, 2, 3]);

  test('Pyroscope PushRequest: series(1) { labels(1) {name 1, value 2}, samples(2) {raw_profile 1, ID 2} }', () => {
    const msg = pyroscopePushRequest(labels, profile, 'id-1');
    const series = messages(msg, 1);
    assert.equal(series.length, 1);
    assert.deepEqual(
      messages(series[0]!, 1).map((l) => [stringField(l, 1), stringField(l, 2)]),
      [
        ['__name__', 'process_cpu'],
        ['service_name', 'web-1'],
      ],
    );
    const raw = messages(series[0]!, 2);
    assert.equal(raw.length, 1);
    assert.deepEqual([...messages(raw[0]!, 1)[0]!], [0x1f, 0x8b, 1, 2, 3]);
    assert.equal(stringField(raw[0]!, 2), 'id-1');
  });

  test('Parca WriteRawRequest: tenant(1), series(2) { LabelSet(1) { labels(1) }, samples(2) }, normalized(3)', () => {
    const msg = parcaWriteRawRequest(labels, profile, 't1');
    assert.equal(stringField(msg, 1), 't1');
    const series = messages(msg, 2);
    assert.equal(series.length, 1);
    const set = messages(series[0]!, 1);
    assert.equal(set.length, 1);
    assert.deepEqual(
      messages(set[0]!, 1).map((l) => [stringField(l, 1), stringField(l, 2)]),
      [
        ['__name__', 'process_cpu'],
        ['service_name', 'web-1'],
      ],
    );
    assert.deepEqual([...messages(messages(series[0]!, 2)[0]!, 1)[0]!], [0x1f, 0x8b, 1, 2, 3]);
    assert.equal(fields(msg).filter((f) => f.field === 3).length, 0, 'normalized false is left out');
    // a 200-byte profile: the lengths take two-byte varints
    const big = parcaWriteRawRequest(labels, new Uint8Array(200).fill(7));
    assert.equal(messages(messages(messages(big, 2)[0]!, 2)[0]!, 1)[0]!.length, 200);
  });

  test('gRPC framing: flag 0, big-endian u32 length, the message', () => {
    assert.deepEqual([...grpcFrame(Uint8Array.from([9, 8, 7]))], [0, 0, 0, 0, 3, 9, 8, 7]);
    assert.equal(grpcFrame(new Uint8Array(70000)).subarray(0, 5).join(','), '0,0,1,17,112');
  });

  test('metrics text format 0.0.4', () => {
    assert.equal(
      renderMetrics([
        { name: 'a_total', help: 'A "b"\\c', type: 'counter', samples: [{ labels: { backend: 'x"y\n' }, value: 3 }] },
        { name: 'g', help: 'G', type: 'gauge', samples: [{ value: 0.5 }, { labels: { k: 'v' }, value: NaN }] },
      ]),
      '# HELP a_total A "b"\\\\c\n# TYPE a_total counter\na_total{backend="x\\"y\\n"} 3\n' +
        '# HELP g G\n# TYPE g gauge\ng 0.5\ng{k="v"} 0\n',
    );
  });

  test('cgroup paths and container ids', () => {
    assert.equal(
      cgroupPath('0::/system.slice/docker-' + 'a'.repeat(64) + '.scope\n'),
      `/system.slice/docker-${'a'.repeat(64)}.scope`,
    );
    assert.equal(cgroupPath('12:cpu,cpuacct:/docker/abc\n11:memory:/x\n'), '/docker/abc');
    assert.equal(
      containerIdOf(`/system.slice/docker-${'0123456789abcdef'.repeat(4)}.scope`),
      '0123456789abcdef'.repeat(4),
    );
    assert.equal(
      containerIdOf(`/kubepods.slice/kubepods-burstable.slice/cri-containerd-${'f'.repeat(64)}.scope`),
      'f'.repeat(64),
    );
    assert.equal(containerIdOf(`/kubepods/besteffort/pod1234/${'e'.repeat(64)}`), 'e'.repeat(64));
    assert.equal(containerIdOf('/user.slice/user-0.slice/session-1.scope'), '');
  });
});

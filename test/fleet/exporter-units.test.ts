/**
 * The exporter's pure parts, no kernel: bpftrace histogram → cumulative `le` buckets (the table of docs/fleet.md,
 * written out here), decoders, config errors with their lines, flag parsing (loopback by default), the
 * exposition's escaping and OpenMetrics names, Accept negotiation.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Hist, HistBucket, LinearHist } from '../../src/api/index.js';
import { ConfigError, type DecoderConfig, type MetricConfig, parseConfig } from '../../src/fleet/exporter/config.js';
import { DECODERS, decodeLabels, DecodeError, SKIP } from '../../src/fleet/exporter/decoders/index.js';
import { expose } from '../../src/fleet/exporter/exposition.js';
import { cumulative } from '../../src/fleet/exporter/histogram.js';
import { parseArgs } from '../../src/fleet/exporter/main.js';
import { wantsOpenMetrics } from '../../src/fleet/exporter/server.js';

const b = (low: bigint | null, high: bigint | null, count: bigint): HistBucket => ({ low, high, count });

function metric(over: Partial<MetricConfig>): MetricConfig {
  return { kind: 'histogram', name: 'h', help: 'h', map: 'h', labels: [], bucketMultiplier: 1, line: 1, ...over };
}

describe('hist → le buckets', () => {
  // values: -5 (x1), 0 (x2), 1 (x3), 2..3 (x4), 4..7 (x5), 1024..2047 (x6)
  const h: Hist = {
    kind: 'hist',
    bits: 0,
    buckets: [b(null, 0n, 1n), b(0n, 1n, 2n), b(1n, 2n, 3n), b(2n, 4n, 4n), b(4n, 8n, 5n), b(1024n, 2048n, 6n)],
  };

  test('exp2: [2^k, 2^(k+1)) ends at le 2^(k+1)-1; lower values count in the first bucket', () => {
    const r = cumulative(metric({ bucketType: 'exp2', bucketMin: 0, bucketMax: 3 }), h);
    assert.deepEqual(r, {
      buckets: [
        { le: 1, count: 6n },
        { le: 3, count: 10n },
        { le: 7, count: 15n },
        { le: 15, count: 15n },
      ],
      count: 21n,
    });
  });

  test('exp2zero adds le 0; the multiplier scales le (µs → s)', () => {
    const r = cumulative(metric({ bucketType: 'exp2zero', bucketMin: 1, bucketMax: 2, bucketMultiplier: 0.000001 }), h);
    assert.deepEqual(r.buckets, [
      { le: 0, count: 3n },
      { le: 0.000003, count: 10n },
      { le: 0.000007, count: 15n },
    ]);
  });

  test('fixed keys on bucket ends; a key inside a bucket is an error, not a guess', () => {
    const r = cumulative(metric({ bucketType: 'fixed', bucketKeys: [-1, 0, 7, 2047] }), h);
    assert.deepEqual(
      r.buckets.map((x) => [x.le, x.count]),
      [
        [-1, 1n],
        [0, 3n],
        [7, 15n],
        [2047, 21n],
      ],
    );
    assert.throws(() => cumulative(metric({ bucketType: 'fixed', bucketKeys: [1500] }), h), /falls inside/);
  });

  test('linear: lhist(v, 0, 30, 10) → le -1, 9, 19, 29 and +Inf', () => {
    const l: LinearHist = {
      kind: 'lhist',
      min: 0,
      max: 30,
      step: 10,
      buckets: [b(null, 0n, 1n), b(0n, 10n, 2n), b(20n, 30n, 3n), b(30n, null, 4n)],
    };
    const r = cumulative(metric({ bucketType: 'linear' }), l);
    assert.deepEqual(r, {
      buckets: [
        { le: -1, count: 1n },
        { le: 9, count: 3n },
        { le: 19, count: 3n },
        { le: 29, count: 6n },
      ],
      count: 10n,
    });
  });
});

describe('decoders', () => {
  const conf = (o: Partial<DecoderConfig> = {}): DecoderConfig => ({
    name: 'uint',
    allowUnknown: false,
    line: 1,
    ...o,
  });

  test('uint, string, hex', () => {
    assert.equal(DECODERS.uint(42n, conf()), '42');
    assert.equal(DECODERS.uint(-1n, conf()), '18446744073709551615');
    assert.equal(DECODERS.uint(Uint8Array.from([1, 1]), conf()), '257');
    assert.equal(DECODERS.string(Uint8Array.from([104, 105, 0, 120]), conf()), 'hi');
    assert.equal(DECODERS.hex(Uint8Array.from([0xde, 0xad]), conf()), 'dead');
    assert.equal(DECODERS.hex(1n, conf()), '0100000000000000');
    assert.throws(() => DECODERS.uint('abc', conf()), DecodeError);
  });

  test('static_map: unknown values, allow_unknown', () => {
    const staticMap = new Map([['1', 'one']]);
    assert.equal(DECODERS.static_map(1n, conf({ staticMap })), 'one');
    assert.equal(DECODERS.static_map(2n, conf({ staticMap })), 'unknown:2');
    assert.equal(DECODERS.static_map(2n, conf({ staticMap, allowUnknown: true })), '2');
  });

  test('regexp: first match, its one group, else the label set is dropped', () => {
    const c = conf({ regexps: [/^x(\d+)/u, /^[a-z]+/u] });
    assert.equal(DECODERS.regexp('x12y', c), '12');
    assert.equal(DECODERS.regexp('abc1', c), 'abc');
    assert.equal(DECODERS.regexp('ABC', c), SKIP);
  });

  test('errno, syscall (x86-64 numbers)', () => {
    assert.equal(DECODERS.errno(2n, conf()), 'ENOENT');
    assert.equal(DECODERS.errno(-11n, conf()), 'EAGAIN');
    assert.equal(DECODERS.errno(9999n, conf()), 'unknown:9999');
    if (process.arch === 'x64') {
      assert.equal(DECODERS.syscall(0n, conf()), 'read');
      assert.equal(DECODERS.syscall(1n, conf()), 'write');
    }
    assert.equal(DECODERS.syscall(99999n, conf()), 'unknown_syscall:99999');
  });

  test('inet_ip, dname, kstack, majorminor', () => {
    assert.equal(DECODERS.inet_ip(Uint8Array.from([10, 0, 0, 1]), conf()), '10.0.0.1');
    // __be32 10.0.0.1 read as a little-endian integer
    assert.equal(DECODERS.inet_ip(0x0100000an, conf()), '10.0.0.1');
    const v6 = new Uint8Array(16);
    v6[0] = 0x20;
    v6[1] = 0x01;
    v6[2] = 0x0d;
    v6[3] = 0xb8;
    v6[15] = 1;
    assert.equal(DECODERS.inet_ip(v6, conf()), '2001:db8::1');
    assert.equal(DECODERS.inet_ip('192.168.1.1', conf()), '192.168.1.1');
    const wire = Uint8Array.from([3, 119, 119, 119, 7, 101, 120, 97, 109, 112, 108, 101, 3, 99, 111, 109, 0]);
    assert.equal(DECODERS.dname(wire, conf()), 'www.example.com');
    assert.equal(DECODERS.dname(new Uint8Array(0), conf()), '.');
    assert.equal(
      DECODERS.kstack({ stack: 'kernel', frames: ['do_sys_openat2+114', 'x64_sys_call+8'] }, conf()),
      'do_sys_openat2\nx64_sys_call',
    );
    // major 4095, minor 1048575: no such device
    assert.equal(DECODERS.majorminor((4095n << 20n) | 0xfffffn, conf()), 'unknown:4095:1048575');
  });

  test('decodeLabels chains decoders per key element', () => {
    const labels = [
      {
        name: 'a',
        line: 1,
        decoders: [conf({ name: 'uint' }), conf({ name: 'static_map', staticMap: new Map([['7', 'seven']]) })],
      },
      { name: 'b', line: 1, decoders: [conf({ name: 'string' })] },
    ];
    assert.deepEqual(decodeLabels(labels, [7n, 'x']), ['seven', 'x']);
  });
});

describe('config errors name the line', () => {
  const err = (yaml: string): string => {
    try {
      parseConfig('c', '/d/c.yaml', yaml);
    } catch (e) {
      assert.ok(e instanceof ConfigError, String(e));
      return e.message;
    }
    assert.fail('no error');
  };

  test('schema errors', () => {
    assert.equal(err('metrics:\n  counters:\n    - name: x\n'), '/d/c.yaml:3: metrics.counters.0 lacks "help"');
    assert.equal(
      err('metrics:\n  counters:\n    - name: 9x\n      help: h\n'),
      '/d/c.yaml:3: metrics.counters.0.name is not a valid Prometheus name (^[a-zA-Z_:][a-zA-Z0-9_:]*$)',
    );
    assert.equal(
      err('metrics: {}\ntracing: {}\n'),
      '/d/c.yaml:2: "tracing" is an ebpf_exporter key bpfscope does not support: OpenTelemetry spans are not implemented',
    );
    assert.equal(
      err(
        'metrics:\n  counters:\n    - name: x\n      help: h\n      labels:\n        - name: l\n          decoders:\n            - name: regexp\n              regexps: ["("]\n',
      ),
      '/d/c.yaml:9: bad regexp: Invalid regular expression: /(/u: Unterminated group',
    );
    assert.equal(err('metrics:\n  counters: []\n'), '/d/c.yaml:2: the config defines no metrics');
    assert.equal(
      err('metrics:\n  counters:\n    - name: x\n      help: h\n'),
      '/d/c.yaml: no program: add a "program:" key or /d/c.bt',
    );
  });

  test('a block program: lines count from the line after program: |', () => {
    const c = parseConfig(
      'c',
      '/d/c.yaml',
      'program: |\n  BEGIN {}\nmetrics:\n  counters:\n    - name: x\n      help: h\n',
    );
    assert.equal(c.program.lineOffset, 1);
    assert.equal(c.program.text, 'BEGIN {}\n');
  });
});

describe('flags, exposition, negotiation', () => {
  test('defaults: 127.0.0.1:9435, /metrics', () => {
    const o = parseArgs(['--config.dir', '/d', '--config.names=a,b']);
    assert.ok(o !== 'help');
    assert.equal(o.host, '127.0.0.1');
    assert.equal(o.port, 9435);
    assert.equal(o.telemetryPath, '/metrics');
    assert.deepEqual(o.configNames, ['a', 'b']);
    const all = parseArgs(['--config.dir=/d', '--config.names=a', '--web.listen-address=:9435']);
    assert.ok(all !== 'help');
    assert.equal(all.host, '::');
    assert.throws(() => parseArgs(['--config.dir=/d', '--config.names=../x']), /bad config name/);
  });

  test('text and OpenMetrics', () => {
    const fams = [
      {
        name: 'ebpf_exporter_x_total',
        help: 'a\\b\nc',
        type: 'counter' as const,
        samples: [{ suffix: '', labels: [['l', 'q"\\\n']] as const, value: '3' }],
      },
    ];
    assert.equal(
      expose(fams, false),
      '# HELP ebpf_exporter_x_total a\\\\b\\nc\n# TYPE ebpf_exporter_x_total counter\nebpf_exporter_x_total{l="q\\"\\\\\\n"} 3\n',
    );
    assert.equal(
      expose(fams, true),
      '# HELP ebpf_exporter_x a\\\\b\\nc\n# TYPE ebpf_exporter_x counter\nebpf_exporter_x_total{l="q\\"\\\\\\n"} 3\n',
    );
  });

  test('Accept negotiation', () => {
    assert.equal(wantsOpenMetrics(undefined), false);
    assert.equal(wantsOpenMetrics('text/plain;version=0.0.4'), false);
    assert.equal(
      wantsOpenMetrics(
        'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1',
      ),
      true,
    );
    assert.equal(wantsOpenMetrics('application/openmetrics-text;q=0'), false);
  });
});

#!/usr/bin/env node
// Exporter scrape cost with 10,000 series (issue 15): `npm run build && node bench/exporter.mjs [--rounds N]`.
// The exporter (dist/src/fleet/exporter/exporter.js) is given a program whose maps are in memory: a counter map
// of 10,000 keys (one label, decoders uint + static_map) and a histogram map of 200 keys x 27 exp2 buckets
// (200 x 29 = 5,800 more series). What is measured is the exporter's own work per scrape (decoding, the guard,
// bucket conversion, text exposition and prom-client's metrics), not reading kernel maps (docs/fleet.md).
// Prints the median and p90 wall time per scrape and the CPU time (user + system) per scrape, both formats.
import { Exporter } from '../dist/src/fleet/exporter/exporter.js';

const rounds = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 50;
const SERIES = 10_000;

const dec = (name, extra = {}) => ({ name, allowUnknown: true, line: 1, ...extra });
const counter = {
  kind: 'counter',
  name: 'bench_total',
  help: 'bench',
  map: 'bench_total',
  bucketMultiplier: 1,
  line: 1,
  labels: [
    { name: 'key', line: 1, decoders: [dec('uint'), dec('static_map', { staticMap: new Map([['1', 'one']]) })] },
  ],
  maxSeries: 20_000,
};
const hist = {
  kind: 'histogram',
  name: 'bench_seconds',
  help: 'bench',
  map: 'bench_seconds',
  bucketMultiplier: 0.000001,
  line: 1,
  bucketType: 'exp2',
  bucketMin: 0,
  bucketMax: 26,
  labels: [{ name: 'key', line: 1, decoders: [dec('uint')] }],
};
const counterEntries = Array.from({ length: SERIES }, (_, i) => ({ elements: [BigInt(i)], value: BigInt(i * 3) }));
const histEntries = Array.from({ length: 200 }, (_, i) => ({
  elements: [BigInt(i)],
  value: {
    kind: 'hist',
    bits: 0,
    buckets: Array.from({ length: 20 }, (_, k) => ({
      low: 1n << BigInt(k),
      high: 1n << BigInt(k + 1),
      count: BigInt(k + i),
    })),
  },
}));
const config = {
  name: 'bench',
  file: 'bench.yaml',
  program: { text: '', file: 'bench.bt', lineOffset: 0 },
  metrics: [counter, hist],
};
const program = {
  exited: new Promise(() => {}),
  readMap: async (name) => (name === 'bench_total' ? counterEntries : histEntries),
  mapNames: async () => ['bench_total', 'bench_seconds'],
  programIds: () => [],
  close: async () => {},
};
const prepared = {
  text: '',
  sourceName: 'bench.bt',
  warnings: [],
  maps: new Map([
    [counter, { keyTypes: [{}] }],
    [hist, { keyTypes: [{}] }],
  ]),
};
const ex = new Exporter([{ config, prepared, program }], () => {});

for (const om of [false, true]) {
  const wall = [];
  let size = 0;
  await ex.scrape(om); // warm-up
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < rounds; i++) {
    const t0 = process.hrtime.bigint();
    size = (await ex.scrape(om)).body.length;
    wall.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const cpu = process.cpuUsage(cpu0);
  wall.sort((a, b) => a - b);
  const ms = (v) => `${v.toFixed(1)} ms`;
  console.log(
    `${om ? 'OpenMetrics' : 'text 0.0.4 '}: ${SERIES + 200 * 29} series, ${(size / 1024).toFixed(0)} KiB; ` +
      `scrape median ${ms(wall[Math.floor(rounds / 2)])}, p90 ${ms(wall[Math.floor(rounds * 0.9)])}; ` +
      `CPU ${ms((cpu.user + cpu.system) / 1000 / rounds)} per scrape (${rounds} rounds)`,
  );
}

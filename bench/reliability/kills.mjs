#!/usr/bin/env node
// Issue 19, campaign item 1: randomized kills. N runs of one-liners (tracepoints, uprobes incl. a uprobe_multi
// wildcard, uretprobe, profile, usdt, rawtracepoint; most with a -c command) and of 10 bcc tools, each sent SIGINT,
// SIGTERM or SIGKILL in a chosen phase (compile, load, attach, streaming, printing maps), then checked for leftover
// BPF programs/maps/links, perf events, tracefs uprobe/kprobe/dynamic events, pins, processes and registry records,
// and (SIGINT/SIGTERM) for maps printed whole or not at all. What is run and checked: test/helpers/kill-campaign.ts.
//
// Usage (as root, after `npm run build`): node bench/reliability/kills.mjs [--runs 200] [--seed 1] [--json FILE]
// Prints one line per run, then a table of runs per signal and phase seen, leftovers and failures (docs/reliability.md
// "1. Randomized kills" records it). Exit status 1 when a run failed a check.
import { writeFileSync } from 'node:fs';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const runs = Number(arg('--runs', '200'));
const seed = Number(arg('--seed', '1'));
const json = arg('--json', undefined);
if (!Number.isInteger(runs) || runs <= 0 || !Number.isInteger(seed)) {
  console.error('usage: node bench/reliability/kills.mjs [--runs N] [--seed N] [--json FILE]');
  process.exit(2);
}
const { campaign, summary } = await import(new URL('../../dist/test/helpers/kill-campaign.js', import.meta.url).href);
const t0 = Date.now();
const results = await campaign(seed, runs, (r) => {
  const map = r.mapLines === undefined ? '' : ` @k lines ${r.mapLines}`;
  console.log(
    `${String(r.index).padStart(3)} ${r.case.padEnd(26)} ${r.signal.padEnd(7)} aimed ${r.target.padEnd(9)} seen ${r.phase.padEnd(9)} ${r.status}${map} ${r.ms} ms${r.failures.length ? ' FAILED' : ''}`,
  );
});
console.log(`\nseed ${seed}, ${runs} runs, ${Math.round((Date.now() - t0) / 1000)} s\n`);
console.log(summary(results));
if (json) writeFileSync(json, JSON.stringify({ seed, runs, results }, null, 1));
process.exit(results.some((r) => r.failures.length) ? 1 : 0);

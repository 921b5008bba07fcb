#!/usr/bin/env node
// Issue 19, campaign item 2, the loaded sample: N programs from the compile fuzzer's generator (test/lang/fuzzgen.ts,
// seeded) compiled for this host and LOADED into the kernel (maps created, every program through BPF_PROG_LOAD and
// the verifier; nothing attached, nothing runs), then closed. Each program must load, or fail with a positioned
// message: a CompileError whose every diagnostic has a source span, or a verifier rejection (ProgramRejected) that
// points at the statement the verifier stopped in. Anything else is counted and listed: a rejection without a
// position, another kernel or host error, an internal error (any other exception, or "internal" in a message), a
// crash or a hang (no progress for --hang seconds: the worker is killed and the next program goes on).
//
// Usage (as root, after `npm run build`):
//   node bench/reliability/fuzz-load.mjs [--runs 5000] [--seed 1] [--hang 120] [--json FILE]
// Prints a summary table and the programs of every non-clean outcome (docs/reliability.md "2. Fuzzing" records it).
// Exit status 1 when any program had a non-clean outcome.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : dflt;
};
const runs = Number(arg('--runs', '5000'));
const seed = Number(arg('--seed', '1'));
const hangSec = Number(arg('--hang', '120'));
const json = arg('--json', undefined);
if (![runs, seed, hangSec].every(Number.isInteger) || runs <= 0 || hangSec <= 0) {
  console.error('usage: node bench/reliability/fuzz-load.mjs [--runs N] [--seed N] [--hang SECONDS] [--json FILE]');
  process.exit(2);
}
// the loadOne outcomes that are a program loaded, or refused with a positioned message
const CLEAN = new Set(['loaded', 'compile error', 'verifier rejection', 'host error']);
const dist = (p) => new URL(`../../dist/${p}`, import.meta.url).href;

if (process.argv.includes('--worker')) {
  await worker(Number(arg('--from', '0')));
} else {
  await parent();
}

/** Load programs from index `from` on, one JSON line per program on stdout. */
async function worker(from) {
  const fc = (await import('fast-check')).default;
  const { fuzzProgram } = await import(dist('test/lang/fuzzgen.js'));
  const { loadOne } = await import(dist('test/helpers/fuzz-load.js'));
  const programs = fc.sample(fuzzProgram, { seed, numRuns: runs });
  for (let i = from; i < programs.length; i++) {
    const t = performance.now();
    const r = loadOne(programs[i]);
    process.stdout.write(`${JSON.stringify({ i, ...r, ms: Math.round(performance.now() - t) })}\n`);
  }
}

async function parent() {
  const script = fileURLToPath(import.meta.url);
  const results = [];
  const t0 = Date.now();
  let next = 0;
  while (next < runs) {
    const child = spawn(
      process.execPath,
      [script, '--worker', '--from', String(next), '--runs', String(runs), '--seed', String(seed)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let timer;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => child.kill('SIGKILL'), hangSec * 1000);
    };
    arm();
    const exited = new Promise((res) => child.on('exit', (code, sig) => res({ code, sig })));
    for await (const line of createInterface({ input: child.stdout })) {
      arm();
      const r = JSON.parse(line);
      results[r.i] = r;
      next = r.i + 1;
      if (next % 500 === 0) process.stderr.write(`${next}/${runs} ${Math.round((Date.now() - t0) / 1000)} s\n`);
    }
    clearTimeout(timer);
    const { code, sig } = await exited;
    if (next < runs) {
      // the worker died or hung on program `next`: record it and go on after it
      results[next] = { i: next, outcome: sig === 'SIGKILL' ? 'hang' : 'crash', detail: `exit ${code} ${sig ?? ''}` };
      next++;
    }
  }
  const fc = (await import('fast-check')).default;
  const { fuzzProgram } = await import(dist('test/lang/fuzzgen.js'));
  const programs = fc.sample(fuzzProgram, { seed, numRuns: runs });
  const counts = {};
  for (const r of results) counts[r.outcome] = (counts[r.outcome] ?? 0) + 1;
  const ms = results.filter((r) => r.ms !== undefined).map((r) => r.ms);
  const slowest = results.reduce((a, r) => ((r.ms ?? 0) > (a?.ms ?? -1) ? r : a), undefined);
  console.log(`seed ${seed}, ${runs} programs loaded, ${Math.round((Date.now() - t0) / 1000)} s`);
  console.log('| outcome | programs |\n|---|---:|');
  for (const [k, v] of Object.entries(counts).sort((a, b) => b[1] - a[1])) console.log(`| ${k} | ${v} |`);
  console.log(
    `mean ${(ms.reduce((a, b) => a + b, 0) / ms.length).toFixed(1)} ms per program; slowest ${slowest?.ms} ms`,
  );
  const rejected = results.filter((r) => r.outcome === 'verifier rejection');
  const byReason = {};
  for (const r of rejected) byReason[r.detail] = (byReason[r.detail] ?? 0) + 1;
  if (rejected.length) {
    console.log('\nverifier rejections by the log line that ends them:');
    for (const [k, v] of Object.entries(byReason).sort((a, b) => b[1] - a[1])) console.log(`  ${v} × ${k}`);
  }
  const bad = results.filter((r) => !CLEAN.has(r.outcome));
  for (const r of bad) console.log(`\n#${r.i} ${r.outcome}: ${r.detail}\n${programs[r.i]}`);
  if (json) writeFileSync(json, JSON.stringify({ seed, runs, counts, results }, null, 1));
  process.exit(bad.length ? 1 : 0);
}

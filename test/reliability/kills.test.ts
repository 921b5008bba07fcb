/**
 * The randomized kill campaign's short version (issue 19, campaign item 1): 20 runs with a fixed seed, every pair of
 * signal (SIGINT, SIGTERM, SIGKILL) and aimed phase (compile, load, attach, streaming, printing maps) at least once;
 * each run must leave no BPF object, tracefs event, pin, process or registry record, end with status 0 or by the
 * signal, and print its 100-key map whole or not at all. What a run does and checks: test/helpers/kill-campaign.ts;
 * the 200-run version: `node bench/reliability/kills.mjs` (docs/reliability.md "1. Randomized kills").
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bpftoolSkipReason } from '../helpers/bpf-objects.js';
import { bpfscopeSkipReason } from '../helpers/cli.js';
import { campaign, PHASES, SIGNALS, summary } from '../helpers/kill-campaign.js';

const SEED = 19;
const RUNS = 20;

test(`${RUNS} randomized kills leave nothing behind (seed ${SEED})`, { timeout: 300_000 }, async (t) => {
  const why = bpfscopeSkipReason() ?? bpftoolSkipReason();
  if (why) return t.skip(why);
  const results = await campaign(SEED, RUNS);
  const table = summary(results);
  for (const line of table.split('\n')) t.diagnostic(line);
  // the plan covers every signal and every aimed phase
  for (const s of SIGNALS)
    assert.ok(
      results.some((r) => r.signal === s),
      `no run with ${s}`,
    );
  for (const p of PHASES)
    assert.ok(
      results.some((r) => r.target === p),
      `no run aimed at ${p}`,
    );
  // the table's figures are the assertions' subject: no failures, and the runs did reach a running state
  assert.deepEqual(
    results
      .filter((r) => r.failures.length)
      .map((r) => `${r.index} ${r.case} ${r.signal} ${r.phase}: ${r.failures.join('; ')}`),
    [],
    table,
  );
  assert.ok(
    results.filter((r) => r.phase === 'streaming').length >= 2,
    `too few runs killed while streaming:\n${table}`,
  );
});

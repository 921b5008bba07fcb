/**
 * Flame graphs (issue 4, item 7): the flame graph engineer's benchmark lives in bench/flame/run.mjs; this only runs
 * it and takes its results into the same report.
 *
 * Contract with bench/flame/run.mjs (any of these works, first match wins):
 * 1. it writes JSON to the path in env BPFSCOPE_BENCH_JSON: `{ markdown?: string, rows?: Row[], ... }` where a Row is
 *    `{ name, unit, ours: number[], peer: number[], target?: { op: '>=', ratio: 10 } }` (ours = bpfscope, peer =
 *    the Perl scripts) — rows are tabulated like every other section, `markdown` is included as is;
 * 2. it writes bench/results/flame.md, included as is;
 * 3. otherwise its stdout (today: a Markdown table) is included as is.
 * It gets `--rounds N` and env BPFSCOPE_BENCH_ROUNDS; FLAMEGRAPH_DIR (where FlameGraph's Perl scripts are) is passed
 * through from the environment: without it the script measures bpfscope alone and says so.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR, RESULTS_DIR, ROOT } from './env.mjs';

export const FLAME_SCRIPT = join(BENCH_DIR, 'flame', 'run.mjs');

/** @returns null when bench/flame/run.mjs does not exist */
export async function runFlame({ rounds, log }) {
  if (!existsSync(FLAME_SCRIPT)) return null;
  const json = join(tmpdir(), `bpfs-bench-flame-${process.pid}.json`);
  rmSync(json, { force: true });
  const child = spawn(process.execPath, [FLAME_SCRIPT, '--rounds', String(rounds)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, BPFSCOPE_BENCH_JSON: json, BPFSCOPE_BENCH_ROUNDS: String(rounds) },
  });
  let stdout = '';
  child.stdout.on('data', (d) => {
    stdout += d;
    process.stderr.write(d);
  });
  const code = await new Promise((r) => child.on('close', r));
  if (code !== 0) log(`  bench/flame/run.mjs exited with ${code}`);
  const result = { exitCode: code, rows: [], markdown: null };
  if (existsSync(json)) {
    const j = JSON.parse(readFileSync(json, 'utf8'));
    rmSync(json, { force: true });
    result.json = j;
    if (Array.isArray(j.rows)) result.rows = j.rows;
    if (typeof j.markdown === 'string') result.markdown = j.markdown;
  } else if (existsSync(join(RESULTS_DIR, 'flame.md'))) {
    result.markdown = readFileSync(join(RESULTS_DIR, 'flame.md'), 'utf8');
  } else {
    result.markdown = stdout.trim();
  }
  return result;
}

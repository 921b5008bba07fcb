/**
 * Helpers for the `--json` and runTool cases of the tool tests: run a tool, act (start a workload) once it is
 * attached, and collect its result objects until the expected ones arrived. JSON mode prints no header, so readiness
 * is the run's BPF links (its probes attached); the output is one JSON object per line.
 */
import assert from 'node:assert/strict';
import type { ToolRun } from '../../src/tools/api.js';
import { startBpfscope, type ToolRun as CliRun, waitForLinks } from './helpers.js';

/**
 * Run `bpfscope ARGS... --json`; once the process holds `links` BPF links (JSON mode prints no header to wait
 * for), `act()`, then read the JSON objects from stdout until `until(objects)` holds (or `ms` passed), end the run
 * with SIGINT and return every object printed. Asserts exit status 0 and that every line is one JSON object.
 */
export async function jsonRows<T = Record<string, unknown>>(
  args: string[],
  links: number,
  act: () => unknown,
  until: (rows: T[]) => boolean,
  ms = 15_000,
): Promise<T[]> {
  const run = startBpfscope([...args, '--json']);
  const parse = (text: string): T[] =>
    text
      .split('\n')
      .filter((l) => l.length > 0)
      .map((l) => {
        assert.equal(l[0], '{', l);
        return JSON.parse(l) as T;
      });
  try {
    assert.ok(await waitForLinks(run.pid, links, 20_000), `not attached: ${run.stderr()}`);
    await act();
    const end = Date.now() + ms;
    while (Date.now() < end && !until(parse(run.stdout().replace(/[^\n]*$/, '')))) {
      if (run.child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    run.child.kill('SIGINT');
  }
  const r = await run.done;
  assert.equal(r.code, 0, r.stderr);
  return parse(r.stdout);
}

/**
 * Read `run.rows()` until `until(rows)` holds, then close the run (also after `ms` without it: the rows so far
 * are returned). Asserts the run ended with status 0.
 */
export async function apiRows<T>(run: ToolRun<T>, until: (rows: T[]) => boolean, ms = 15_000): Promise<T[]> {
  const rows: T[] = [];
  const timer = setTimeout(() => void run.close(), ms);
  try {
    if (!until(rows)) {
      for await (const row of run.rows()) {
        rows.push(row);
        if (until(rows)) break;
      }
    }
  } finally {
    clearTimeout(timer);
  }
  assert.equal(await run.close(), 0);
  return rows;
}

/** Start `bpfscope ARGS` (with --json among them) and resolve once it holds `links` BPF links. */
export async function startJson(args: string[], links = 1, opts: { timeoutMs?: number } = {}): Promise<CliRun> {
  const run = startBpfscope(args, opts);
  assert.ok(await waitForLinks(run.pid, links, 30_000), `${args.join(' ')} did not attach: ${run.stderr()}`);
  return run;
}

/** The JSON objects of `stdout`, one a line; every non-empty line must be one. */
export function jsonLines<T = Record<string, unknown>>(stdout: string): T[] {
  return stdout
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => {
      assert.equal(l[0], '{', `not a JSON object line: ${l}`);
      return JSON.parse(l) as T;
    });
}

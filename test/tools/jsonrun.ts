/**
 * Helpers for the `--json` and runTool cases of the event tool tests: run a tool, act (start a workload) once it
 * is attached, and collect its result objects until the expected ones arrived.
 */
import assert from 'node:assert/strict';
import type { ToolRun } from '../../src/tools/api.js';
import { startBpfscope, waitForLinks } from './helpers.js';

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

/**
 * `bpfscope TOOL --json` in tests: JSON mode prints no header, so readiness is the run's BPF links (its probes
 * attached); the output is one JSON object per line.
 */
import assert from 'node:assert/strict';
import { startBpfscope, type ToolRun, waitForLinks } from './helpers.js';

/** Start `bpfscope ARGS` (with --json among them) and resolve once it holds `links` BPF links. */
export async function startJson(args: string[], links = 1, opts: { timeoutMs?: number } = {}): Promise<ToolRun> {
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

/**
 * Paths and parsers shared by the flame graph tests: the repository root, this directory's fixtures (not copied
 * to dist/), FlameGraph's reference data in shared/testdata/flamegraph (beside the checkout, or
 * $BPFSCOPE_FLAME_TESTDATA), and a parser that reduces an SVG to its frames for set comparison.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;
/** The repository root (nearest ancestor whose package.json is named "bpfscope"). */
export function repoRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && JSON.parse(readFileSync(pkg, 'utf8')).name === 'bpfscope') {
      root = dir;
      return dir;
    }
    const up = dirname(dir);
    if (up === dir) throw new Error(`no bpfscope package.json above ${import.meta.url}`);
    dir = up;
  }
}

/** A file under test/flame/fixtures. */
export function fixture(...parts: string[]): string {
  return join(repoRoot(), 'test', 'flame', 'fixtures', ...parts);
}

/** FlameGraph reference data directory, or null when it is not there. */
export function referenceData(): string | null {
  const dir = process.env.BPFSCOPE_FLAME_TESTDATA ?? join(repoRoot(), '..', 'shared', 'testdata', 'flamegraph');
  return existsSync(join(dir, 'expected')) ? dir : null;
}

/** Lines of a text file, without the final empty one. */
export function readLines(path: string): string[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/**
 * The frames of a flame graph SVG (ours or flamegraph.pl's), one string per frame:
 * "title|x|y|width|height|fill|text x|text y|label", sorted (flamegraph.pl writes frames in hash order).
 */
export function svgFrames(svg: string): string[] {
  const re =
    /<title>([^<]*)<\/title><rect x="([^"]+)" y="([^"]+)" width="([^"]+)" height="([^"]+)" fill="([^"]+)"[^>]*>\n<text +x="([^"]+)" y="([^"]+)" ?>([^<]*)<\/text>/g;
  const out: string[] = [];
  for (const m of svg.matchAll(re)) out.push(m.slice(1, 10).join('|'));
  return out.sort(byteOrder);
}

/** String order by UTF-8 bytes (as `LC_ALL=C sort` orders the fixture files). */
export function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** Differences between two frame lists, for readable assertion messages. */
export function frameDiff(expected: string[], got: string[]): { missing: string[]; extra: string[] } {
  const g = new Set(got);
  const e = new Set(expected);
  return { missing: expected.filter((x) => !g.has(x)), extra: got.filter((x) => !e.has(x)) };
}

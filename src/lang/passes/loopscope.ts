/**
 * Loop variable scoping: in bpftrace the variable of `for ($x : ...)` exists only inside its loop, so two loops may
 * both use `$kv` with different types, and a `$kv` outside them is another variable. Scratch variables are
 * probe-wide here, so a loop variable whose name also appears elsewhere in the probe is renamed, within its loop,
 * to `name#N` (N counting from 1 per name); a name used by one loop only is left alone.
 */
import type { Block, ForStmt, Program } from '../ast.js';

/** Every `VarExpr` node under `node` (the AST is plain objects; types and positions are skipped). */
function varNodes(node: unknown, out: { name: string }[] = []): { name: string }[] {
  if (Array.isArray(node)) {
    for (const x of node) varNodes(x, out);
  } else if (node && typeof node === 'object') {
    const o = node as { kind?: string; name?: unknown };
    if (o.kind === 'VarExpr' && typeof o.name === 'string') out.push(o as { name: string });
    for (const [k, v] of Object.entries(o)) if (k !== 'type' && k !== 'pos') varNodes(v, out);
  }
  return out;
}

function forLoops(node: unknown, out: ForStmt[] = []): ForStmt[] {
  if (Array.isArray(node)) {
    for (const x of node) forLoops(x, out);
  } else if (node && typeof node === 'object') {
    const o = node as { kind?: string };
    if (o.kind === 'ForStmt') out.push(o as ForStmt);
    for (const [k, v] of Object.entries(o)) if (k !== 'type' && k !== 'pos') forLoops(v, out);
  }
  return out;
}

/** Rename loop variables in place (see the module comment). */
export function scopeLoopVariables(program: Program): void {
  for (const probe of program.probes) {
    const all = varNodes([probe.predicate, probe.body]);
    const counters = new Map<string, number>();
    for (const loop of forLoops(probe.body as Block)) {
      const name = loop.variable.name;
      const inside = new Set(varNodes([loop.variable, loop.body]));
      if (!all.some((v) => v.name === name && !inside.has(v))) continue;
      const n = (counters.get(name) ?? 0) + 1;
      counters.set(name, n);
      const renamed = `${name}#${n}`;
      for (const v of inside) if (v.name === name) v.name = renamed;
    }
  }
}

/**
 * Loop variable scoping: in bpftrace the variable of `for ($x : ...)` exists only inside its loop, so two loops may
 * both use `$kv` with different types, and a `$kv` outside them is another variable. Scratch variables are
 * probe-wide here, so a loop variable whose name also appears elsewhere in the probe is renamed, within its loop,
 * to `name#N` (N counting from 1 per name); a name used by one loop only is left alone.
 */
import type { ForStmt, Program, VarExpr } from '../ast.js';
import { nodesOfKind } from '../astwalk.js';

/** Rename loop variables in place (see the module comment). */
export function scopeLoopVariables(program: Program): void {
  for (const probe of program.probes) {
    const all = nodesOfKind<VarExpr>([probe.predicate, probe.body], 'VarExpr');
    const counters = new Map<string, number>();
    for (const loop of nodesOfKind<ForStmt>(probe.body, 'ForStmt')) {
      const name = loop.variable.name;
      const inside = new Set(nodesOfKind<VarExpr>([loop.variable, loop.body], 'VarExpr'));
      if (!all.some((v) => v.name === name && !inside.has(v))) continue;
      const n = (counters.get(name) ?? 0) + 1;
      counters.set(name, n);
      const renamed = `${name}#${n}`;
      for (const v of inside) if (v.name === name) v.name = renamed;
    }
  }
}

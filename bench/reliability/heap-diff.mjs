#!/usr/bin/env node
/**
 * Compare two V8 heap snapshots of one process (issue 19: what grows in a long-running tool), the way Chrome
 * devtools' "Comparison" view does: nodes grouped by kind and constructor, with the change in count and self size
 * (bytes) from A to B, largest growth first; with `--retainers GROUP`, the retainer path (to a GC root, first
 * strong edge at each step) of a few nodes of that group that are new in B (their ids absent from A; V8 keeps ids
 * stable across snapshots of one process).
 *
 *   node bench/reliability/heap-diff.mjs A.heapsnapshot B.heapsnapshot [--top 40] [--retainers 'object:Object']
 *
 * The snapshots come from the process under study (e.g. a `--require` preload calling `v8.writeHeapSnapshot()` on a
 * timer, kept out of the product); the format is V8's `.heapsnapshot` JSON (`snapshot.meta` names the fields).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: 'string', default: '40' },
    retainers: { type: 'string' },
    paths: { type: 'string', default: '5' },
  },
});

function load(file) {
  const j = JSON.parse(readFileSync(file, 'utf8'));
  const m = j.snapshot.meta;
  const s = {
    nodes: j.nodes,
    edges: j.edges,
    strings: j.strings,
    nf: m.node_fields.length,
    ef: m.edge_fields.length,
    nType: m.node_fields.indexOf('type'),
    nName: m.node_fields.indexOf('name'),
    nId: m.node_fields.indexOf('id'),
    nSize: m.node_fields.indexOf('self_size'),
    nEdges: m.node_fields.indexOf('edge_count'),
    eType: m.edge_fields.indexOf('type'),
    eName: m.edge_fields.indexOf('name_or_index'),
    eTo: m.edge_fields.indexOf('to_node'),
    types: m.node_types[0],
    etypes: m.edge_types[0],
  };
  s.n = s.nodes.length / s.nf;
  s.firstEdge = new Uint32Array(s.n + 1);
  for (let i = 0, e = 0; i < s.n; i++) {
    s.firstEdge[i] = e;
    e += s.nodes[i * s.nf + s.nEdges] * s.ef;
    s.firstEdge[i + 1] = e;
  }
  return s;
}

/** The group of node `i`: `kind:constructor` for objects, closures and native nodes, the kind for strings. */
function group(s, i) {
  const t = s.types[s.nodes[i * s.nf + s.nType]];
  const name = String(s.strings[s.nodes[i * s.nf + s.nName]]);
  if (t === 'object' || t === 'closure' || t === 'native') return `${t}:${name}`;
  if (t.includes('string')) return t;
  return `${t}:${name.slice(0, 40)}`;
}

function byGroup(s) {
  const m = new Map();
  for (let i = 0; i < s.n; i++) {
    const k = group(s, i);
    const r = m.get(k) ?? { count: 0, size: 0 };
    r.count++;
    r.size += s.nodes[i * s.nf + s.nSize];
    m.set(k, r);
  }
  return m;
}

const [fa, fb] = positionals;
if (!fa || !fb) {
  console.error('usage: heap-diff.mjs A.heapsnapshot B.heapsnapshot [--top N] [--retainers GROUP]');
  process.exit(2);
}
const a = load(fa);
const b = load(fb);
const ga = byGroup(a);
const gb = byGroup(b);
const total = (g) => [...g.values()].reduce((x, r) => x + r.size, 0);
console.log(`self size: A ${total(ga)} B ${total(gb)} bytes (${a.n} → ${b.n} nodes)`);
console.log('Δcount     Δbytes    count(B)   bytes(B)  group');
const rows = [];
for (const [k, r] of gb) {
  const o = ga.get(k) ?? { count: 0, size: 0 };
  rows.push({ k, dc: r.count - o.count, ds: r.size - o.size, c: r.count, s: r.size });
}
rows.sort((x, y) => y.ds - x.ds);
for (const r of rows.slice(0, Number(opts.top))) {
  console.log(
    `${String(r.dc).padStart(7)} ${String(r.ds).padStart(10)} ${String(r.c).padStart(10)} ${String(r.s).padStart(10)}  ${r.k}`,
  );
}

if (opts.retainers) {
  const old = new Set();
  for (let i = 0; i < a.n; i++) old.add(a.nodes[i * a.nf + a.nId]);
  const into = new Map();
  for (let i = 0; i < b.n; i++) {
    for (let e = b.firstEdge[i]; e < b.firstEdge[i + 1]; e += b.ef) {
      if (b.etypes[b.edges[e + b.eType]] === 'weak') continue;
      const to = b.edges[e + b.eTo] / b.nf;
      let l = into.get(to);
      if (!l) into.set(to, (l = []));
      if (l.length < 4) l.push({ from: i, e });
    }
  }
  let shown = 0;
  for (let i = 0; i < b.n && shown < Number(opts.paths); i++) {
    if (group(b, i) !== opts.retainers || old.has(b.nodes[i * b.nf + b.nId])) continue;
    shown++;
    console.log(`new ${opts.retainers} (id ${b.nodes[i * b.nf + b.nId]}), retained by:`);
    const seen = new Set([i]);
    for (let cur = i, depth = 0; depth < 16; depth++) {
      const r = (into.get(cur) ?? []).find((x) => !seen.has(x.from));
      if (!r) break;
      const et = b.etypes[b.edges[r.e + b.eType]];
      const en = b.edges[r.e + b.eName];
      const edge = et === 'element' || et === 'hidden' ? `[${en}]` : String(b.strings[en]);
      console.log(`  <- ${et} ${edge} of ${group(b, r.from)}`);
      seen.add(r.from);
      cur = r.from;
    }
  }
}

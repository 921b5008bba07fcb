/**
 * Finding nodes in an AST fragment. The AST is plain data (objects and arrays); `type` (semantic types) and `pos`
 * (spans) hold no nodes and are skipped.
 */

/** Every node of kind `kind` under `node` (itself included), in source order. */
export function nodesOfKind<T extends { kind: string }>(node: unknown, kind: T['kind'], out: T[] = []): T[] {
  if (Array.isArray(node)) {
    for (const x of node) nodesOfKind(x, kind, out);
  } else if (node && typeof node === 'object' && !ArrayBuffer.isView(node)) {
    if ((node as { kind?: unknown }).kind === kind) out.push(node as T);
    for (const [k, v] of Object.entries(node)) if (k !== 'type' && k !== 'pos') nodesOfKind(v, kind, out);
  }
  return out;
}

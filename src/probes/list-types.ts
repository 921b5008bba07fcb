/**
 * `bpfscope -l 'struct task_struct'` / `-lv 'struct task_struct'`: current bpftrace lists kernel types from BTF
 * (`probe_matcher.cpp` get_structs_for_listing, `btf.cpp` get_all_structs). The search (`struct task_*`,
 * `union *`, `enum *`) is a glob over the names of every named struct, union and enum; without `-v` each match is
 * printed by name, with `-v` as its C definition prefixed by the BTF it comes from (`vmlinux: struct file {` ...
 * `};`, what libbpf's btf_dump prints). bpfscope reads vmlinux's BTF only, so every definition is `vmlinux:`.
 */
import { type Btf, BtfKind } from '../kernel/btf.js';
import { byteCompare } from '../kernel/tracefs.js';
import { kernelBtf } from '../lang/btf-types.js';
import { globToRegExp } from './glob.js';

/** Whether a `-l` search names types rather than probes (bpftrace's is_type_name). */
export function isTypeSearch(search: string): boolean {
  return /^(struct|union|enum) /.test(search);
}

const TAG: Record<number, string> = {
  [BtfKind.STRUCT]: 'struct',
  [BtfKind.UNION]: 'union',
  [BtfKind.ENUM]: 'enum',
  [BtfKind.ENUM64]: 'enum',
};

/** Lines to print for a type search. @throws BpfscopeError without kernel BTF */
export function listTypes(search: string, verbose: boolean): string[] {
  const btf = kernelBtf();
  const re = globToRegExp(search.replace(/\s+/g, ' ').trim());
  const found = new Map<string, number>();
  for (let id = 1; id <= btf.count; id++) {
    const tag = TAG[btf.kind(id)];
    if (!tag) continue;
    const name = btf.name(id);
    if (!name) continue;
    const full = `${tag} ${name}`;
    if (!found.has(full) && re.test(full)) found.set(full, id);
  }
  const names = [...found.keys()].sort(byteCompare);
  if (!verbose) return names;
  return names.flatMap((n) => {
    const lines = definition(btf, found.get(n)!, 0);
    lines[0] = `vmlinux: ${lines[0]}`;
    lines[lines.length - 1] += ';';
    return lines;
  });
}

/** `struct NAME {`, the members indented by one tab per level (anonymous members inline), `}`. */
function definition(btf: Btf, id: number, depth: number): string[] {
  const k = btf.kind(id);
  const ind = '\t'.repeat(depth + 1);
  const head = `${TAG[k]}${btf.name(id) ? ` ${btf.name(id)}` : ''} {`;
  if (k === BtfKind.ENUM || k === BtfKind.ENUM64) {
    return [head, ...btf.enumValues(id).map((v) => `${ind}${v.name} = ${v.value},`), '}'];
  }
  const lines = [head];
  for (const m of btf.members(id, { flatten: false })) {
    const inner = btf.kind(m.typeId);
    if ((inner === BtfKind.STRUCT || inner === BtfKind.UNION) && !btf.name(m.typeId)) {
      // an anonymous struct/union member is printed in place
      const body = definition(btf, m.typeId, depth + 1);
      body[0] = `${ind}${body[0]}`;
      body[body.length - 1] = `${ind}${body[body.length - 1]}${m.name ? ` ${m.name}` : ''};`;
      lines.push(...body);
      continue;
    }
    const bits = m.bitSize ? `: ${m.bitSize}` : '';
    lines.push(`${ind}${btf.declaration(m.typeId, m.name)}${bits};`);
  }
  lines.push('}');
  return lines;
}

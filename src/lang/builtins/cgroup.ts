/**
 * The cgroup builtins (bpftrace `docs/stdlib.md`):
 * - `cgroup`: the current task's cgroup v2 id (`bpf_get_current_cgroup_id()`), u64;
 * - `cgroupid(path)`: the cgroup v2 id of the cgroupfs directory `path`, resolved at compile time (the Target's
 *   `cgroupId`: the directory's inode number); a path that cannot be read is an error, as in bpftrace;
 * - `cgroup_path(id[, filter])`: an id printed as its paths, `unified:/a/b` (the `cgroup_path` type, stored as
 *   the u64 id and resolved when printed: runtime/decode.ts and runtime/names.ts `cgroupPath`); `filter` is a glob
 *   over hierarchy names, default `*`.
 */
import { HELPER_ID } from '../../bpf/helpers.js';
import { typeName, U64 } from '../types.js';
import type { BuiltinFunction, BuiltinVariable } from './types.js';

export const CGROUP_VARIABLES: readonly BuiltinVariable[] = [
  {
    name: 'cgroup',
    type: U64,
    ownFunction: true,
    generate: (g) => g.callHelper(HELPER_ID.get_current_cgroup_id, []),
    doc: { usage: '`cgroup`', note: "the current task's cgroup v2 id" },
  },
];

export const CGROUP_FUNCTIONS: readonly BuiltinFunction[] = [
  {
    name: 'cgroupid',
    arity: [1, 1],
    check(c, a) {
      const path = c.args[0]!;
      if (path.kind !== 'StrLit') {
        a.error(path.pos, 'cgroupid() expects a string literal path');
        return null;
      }
      if (a.target.cgroupId(path.value) === undefined) {
        a.error(path.pos, `Failed to resolve cgroup ID for path: ${path.value}`);
      }
      return U64;
    },
    generate: (c, g) => g.constant(g.target.cgroupId((c.args[0] as { value: string }).value) ?? 0n),
    doc: { usage: '`cgroupid("path")`', note: "compile time: the cgroup v2 directory's inode number" },
  },
  {
    name: 'cgroup_path',
    arity: [1, 2],
    check(c, a) {
      const [id, filter] = c.args;
      const t = a.expr(id!);
      if (t && t.kind !== 'int') a.error(id!.pos, `cgroup_path() expects an integer (${typeName(t)} provided)`);
      if (filter && filter.kind !== 'StrLit') {
        a.error(filter.pos, 'cgroup_path() expects a string literal as its filter');
        return null;
      }
      return { kind: 'cgroup_path', filter: filter?.kind === 'StrLit' ? filter.value : '*' };
    },
    generate: (c, g) => g.scalar(c.args[0]!),
    doc: {
      usage: '`cgroup_path(id[, filter])`',
      note: '`unified:/a/b` for cgroup v2, then matching v1 hierarchies, `,`-joined; resolved in user space when printed',
    },
  },
];

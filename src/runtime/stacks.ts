/**
 * Reading kstack/ustack values back: a stored stack is an id (a hash of the frames, see ProbeGen.stack; plus the pid
 * for user stacks) into a HASH map holding up to `limit` u64 instruction pointers, zero-terminated. Frames are symbolized and formatted in the
 * stack's mode by `symbols/resolver.ts` (bpftrace's layouts). Results are cached per (map, id, pid, mode) for the
 * life of the session: a stack id names one stack until the map is cleared.
 */
import type { BpfMap } from '../bpf/map.js';
import type { SType } from '../lang/types.js';
import type { SymbolResolver } from '../symbols/resolver.js';

export class StackReader {
  private cache = new Map<string, string>();

  constructor(
    private readonly maps: (name: string) => BpfMap | undefined,
    private readonly resolver: () => SymbolResolver,
  ) {}

  /** Text of one stored stack (empty when the kernel could not record it, as bpftrace prints it). */
  text(t: Extract<SType, { kind: 'kstack' | 'ustack' }>, id: bigint, pid: number, indent = 8): string {
    if (id < 0n) return '';
    const user = t.kind === 'ustack';
    const name = `stack_${user ? 'u' : 'k'}${Math.max(1, t.limit)}`;
    const key = `${name}/${id}/${pid}/${t.mode}/${indent}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    const ips = this.addresses(name, id).slice(0, t.limit);
    const r = this.resolver();
    const text = user ? r.formatUserStack(pid, ips, t.mode, indent) : r.formatKernelStack(ips, t.mode, indent);
    this.cache.set(key, text);
    return text;
  }

  /** Instruction pointers of stack `id` in map `name` (innermost first). */
  addresses(name: string, id: bigint): bigint[] {
    const map = this.maps(name);
    if (!map) return [];
    const k = Buffer.alloc(8);
    k.writeBigInt64LE(id);
    const v = map.lookup(k);
    if (!v) return [];
    const ips: bigint[] = [];
    for (let off = 0; off + 8 <= v.length; off += 8) {
      const ip = v.readBigUInt64LE(off);
      if (ip === 0n) break;
      ips.push(ip);
    }
    return ips;
  }
}

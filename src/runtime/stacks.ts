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
    const buildId = t.kind === 'ustack' && t.mode === 'build_id';
    const name = `stack_${user ? 'u' : 'k'}${buildId ? 'b' : ''}${Math.max(1, t.limit)}`;
    const key = `${name}/${id}/${pid}/${t.mode}/${indent}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    let text: string;
    if (buildId) text = buildIdStackText(this.maps(name)?.lookup(int64Key(id)));
    else {
      const ips = this.addresses(name, id).slice(0, t.limit);
      const r = this.resolver();
      const mode = t.mode === 'build_id' ? 'raw' : t.mode; // a kstack under stack_mode = build_id prints raw, as bpftrace
      text = user ? r.formatUserStack(pid, ips, mode, indent) : r.formatKernelStack(ips, mode, indent);
    }
    this.cache.set(key, text);
    return text;
  }

  /** Instruction pointers of stack `id` in map `name` (innermost first). */
  addresses(name: string, id: bigint): bigint[] {
    const map = this.maps(name);
    if (!map) return [];
    const v = map.lookup(int64Key(id));
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

function int64Key(id: bigint): Buffer {
  const k = Buffer.alloc(8);
  k.writeBigInt64LE(id);
  return k;
}

/**
 * A `ustack(build_id)` value as bpftrace prints it (its `types_format.cpp` format_build_id_stack): a leading newline,
 * then one unindented line per frame of the kernel's `struct bpf_stack_build_id` (32 bytes: s32 status, 20-byte
 * build id, u64 file offset or IP): status 1 (VALID) -> `BUILDID 0xOFFSET` (40 hex digits, the offset in hex with at
 * least 2 digits), status 2 (IP: the kernel found no build id) -> the IP in hex; frames stop at status 0 (EMPTY).
 */
export function buildIdStackText(v: Buffer | undefined): string {
  let s = '\n';
  if (!v) return s;
  for (let off = 0; off + 32 <= v.length; off += 32) {
    const status = v.readInt32LE(off);
    if (status === 0) break;
    const word = v.readBigUInt64LE(off + 24);
    if (status === 1) s += `${v.subarray(off + 4, off + 24).toString('hex')} 0x${word.toString(16).padStart(2, '0')}\n`;
    else s += `${word.toString(16)}\n`;
  }
  return s;
}

/**
 * A minimal BTF blob describing a program's functions, for BPF_PROG_LOAD's `func_info`. The kernel requires
 * func_info (and so program BTF) before it accepts a callback subprogram (`ld_imm64` with BPF_PSEUDO_FUNC, as
 * bpf_for_each_map_elem takes): "missing btf func_info", and a callback must have static linkage.
 *
 * Layout (`Documentation/bpf/btf.rst`, uapi `linux/btf.h`): a 24-byte header (magic 0xeB9F, version 1, flags 0,
 * hdr_len, type_off, type_len, str_off, str_len), the type section, then the string section (starting with "\0").
 * Types written: [1] INT `long` (8 bytes, signed), [2] PTR to void, then per function a FUNC_PROTO
 * (`long (void *, ...)` with `params` pointer arguments) followed by its FUNC.
 */

import { BtfKind } from '../kernel/btf.js';

const BTF_MAGIC = 0xeb9f;
const BTF_INT_SIGNED = 1;
/** uapi `enum btf_func_linkage`. */
export const BTF_FUNC_STATIC = 0;
export const BTF_FUNC_GLOBAL = 1;

/** One function of a program: its name, how many (pointer) arguments it takes and its linkage. */
export interface BtfFunc {
  name: string;
  params: number;
  linkage: typeof BTF_FUNC_STATIC | typeof BTF_FUNC_GLOBAL;
}

/**
 * The BTF for `funcs`, and the type id of each function's FUNC (for `struct bpf_func_info.type_id`, same order).
 */
export function funcInfoBtf(funcs: readonly BtfFunc[]): { btf: Buffer; funcTypeIds: number[] } {
  const strings: string[] = [''];
  let strLen = 1;
  const str = (s: string): number => {
    const off = strLen;
    strings.push(s);
    strLen += Buffer.byteLength(s) + 1;
    return off;
  };
  const words: number[] = [];
  const type = (nameOff: number, kind: number, vlen: number, sizeOrType: number, ...extra: number[]): void => {
    words.push(nameOff, ((kind & 0x1f) << 24) | (vlen & 0xffff), sizeOrType, ...extra);
  };
  type(str('long'), BtfKind.INT, 0, 8, (BTF_INT_SIGNED << 24) | 64); // [1]
  type(0, BtfKind.PTR, 0, 0); // [2] void *
  let next = 3;
  const funcTypeIds: number[] = [];
  for (const f of funcs) {
    const params: number[] = [];
    for (let i = 0; i < f.params; i++) params.push(str(`a${i}`), 2);
    type(0, BtfKind.FUNC_PROTO, f.params, 1, ...params);
    const proto = next++;
    type(str(f.name), BtfKind.FUNC, f.linkage, proto);
    funcTypeIds.push(next++);
  }
  const typeLen = words.length * 4;
  const strBuf = Buffer.from(strings.map((s) => `${s}\0`).join(''), 'utf8');
  const hdr = Buffer.alloc(24);
  hdr.writeUInt16LE(BTF_MAGIC, 0);
  hdr.writeUInt8(1, 2); // version
  hdr.writeUInt8(0, 3); // flags
  hdr.writeUInt32LE(24, 4); // hdr_len
  hdr.writeUInt32LE(0, 8); // type_off
  hdr.writeUInt32LE(typeLen, 12);
  hdr.writeUInt32LE(typeLen, 16); // str_off
  hdr.writeUInt32LE(strBuf.length, 20);
  const types = Buffer.alloc(typeLen);
  words.forEach((w, i) => types.writeUInt32LE(w >>> 0, i * 4));
  return { btf: Buffer.concat([hdr, types, strBuf]), funcTypeIds };
}

/** Decoders that name numbers: errno, syscall (ebpf_exporter's decoder/errno.go, decoder/syscall.go). */
import { syscallTable } from '../../../runtime/names.js';
import { ERRNO } from '../../../tools/data/errno.js';
import { type Decoder, integer } from './types.js';

let errnoNames: Map<bigint, string> | undefined;

/**
 * errno: the errno's name (`ENOENT`), from the uapi asm-generic headers (tools/data/errno.ts; the first name of
 * aliases); the sign is ignored (kernel functions return -ENOENT); unknown numbers are `unknown:N`.
 */
export const errno: Decoder = (input) => {
  if (!errnoNames) {
    errnoNames = new Map();
    for (const [name, n] of Object.entries(ERRNO)) if (!errnoNames.has(BigInt(n))) errnoNames.set(BigInt(n), name);
  }
  let n = integer(input, 'errno');
  if (n < 0n) n = -n;
  return errnoNames.get(n) ?? `unknown:${n}`;
};

/** syscall: this architecture's system call name (uapi unistd tables), `unknown_syscall:N` for others. */
export const syscall: Decoder = (input) => {
  const n = integer(input, 'syscall');
  const name = n >= 0n && n < 4096n ? syscallTable()[Number(n)] : undefined;
  return name ?? `unknown_syscall:${n}`;
};

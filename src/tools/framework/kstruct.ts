/**
 * Kernel struct layout checks for tools whose bcc version adapts to the kernel's structs (bcc's
 * `BPF.kernel_struct_has_field`), read from the kernel's BTF (`/sys/kernel/btf/vmlinux`).
 */
import { Btf, BtfKind } from '../../kernel/btf.js';

/**
 * Whether `struct <struct>` has member `field` (members of anonymous structs/unions count, as C lets you name
 * them). False when the kernel has no BTF or no such struct.
 */
export function kernelStructHasField(struct: string, field: string): boolean {
  try {
    const btf = Btf.vmlinux();
    const id = btf.findType(struct, BtfKind.STRUCT);
    return id !== undefined && btf.member(id, field) !== undefined;
  } catch {
    return false;
  }
}

/** The first of `fields` that `struct <struct>` has (for renamed members), or undefined. */
export function firstStructField(struct: string, fields: string[]): string | undefined {
  return fields.find((f) => kernelStructHasField(struct, f));
}

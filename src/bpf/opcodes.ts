/**
 * eBPF opcode constants (Linux `include/uapi/linux/bpf_common.h`, `include/uapi/linux/bpf.h`;
 * `Documentation/bpf/standardization/instruction-set.rst`). An opcode byte is `class | size | mode` for loads and
 * stores and `class | op | source` for ALU and jumps.
 */

// Instruction classes (low 3 bits).
export const BPF_LD = 0x00;
export const BPF_LDX = 0x01;
export const BPF_ST = 0x02;
export const BPF_STX = 0x03;
export const BPF_ALU = 0x04;
export const BPF_JMP = 0x05;
export const BPF_JMP32 = 0x06;
export const BPF_ALU64 = 0x07;

// Load/store sizes (bits 3-4).
export const BPF_W = 0x00; // 4 bytes
export const BPF_H = 0x08; // 2 bytes
export const BPF_B = 0x10; // 1 byte
export const BPF_DW = 0x18; // 8 bytes

// Load/store modes (bits 5-7).
export const BPF_IMM = 0x00;
export const BPF_ABS = 0x20;
export const BPF_IND = 0x40;
export const BPF_MEM = 0x60;
export const BPF_MEMSX = 0x80;
export const BPF_ATOMIC = 0xc0;

// Source operand (bit 3).
export const BPF_K = 0x00; // 32-bit immediate
export const BPF_X = 0x08; // source register

// ALU operations (bits 4-7).
export const BPF_ADD = 0x00;
export const BPF_SUB = 0x10;
export const BPF_MUL = 0x20;
export const BPF_DIV = 0x30;
export const BPF_OR = 0x40;
export const BPF_AND = 0x50;
export const BPF_LSH = 0x60;
export const BPF_RSH = 0x70;
export const BPF_NEG = 0x80;
export const BPF_MOD = 0x90;
export const BPF_XOR = 0xa0;
export const BPF_MOV = 0xb0;
export const BPF_ARSH = 0xc0;
export const BPF_END = 0xd0;

// Jump operations (bits 4-7).
export const BPF_JA = 0x00;
export const BPF_JEQ = 0x10;
export const BPF_JGT = 0x20;
export const BPF_JGE = 0x30;
export const BPF_JSET = 0x40;
export const BPF_JNE = 0x50;
export const BPF_JSGT = 0x60;
export const BPF_JSGE = 0x70;
export const BPF_CALL = 0x80;
export const BPF_EXIT = 0x90;
export const BPF_JLT = 0xa0;
export const BPF_JLE = 0xb0;
export const BPF_JSLT = 0xc0;
export const BPF_JSLE = 0xd0;

// Atomic operations (imm field of BPF_STX | BPF_ATOMIC).
export const BPF_FETCH = 0x01;
export const BPF_XCHG = 0xe0 | BPF_FETCH;
export const BPF_CMPXCHG = 0xf0 | BPF_FETCH;

// ld_imm64 pseudo sources (src_reg of `BPF_LD | BPF_DW | BPF_IMM`).
export const BPF_PSEUDO_MAP_FD = 1;
export const BPF_PSEUDO_MAP_VALUE = 2;
export const BPF_PSEUDO_CALL = 1; // src_reg of BPF_CALL for bpf-to-bpf calls
export const BPF_PSEUDO_FUNC = 4; // src_reg of ld_imm64 loading the address of a subprogram (a callback)
export const BPF_PSEUDO_BTF_ID = 3; // src_reg of ld_imm64 loading a kernel variable by its vmlinux BTF id (imm)

/** `BPF_LD | BPF_DW | BPF_IMM` (0x18): the two-slot 64-bit immediate load. */
export const LD_IMM64 = BPF_LD | BPF_DW | BPF_IMM;

// Registers.
export const R0 = 0;
export const R1 = 1;
export const R2 = 2;
export const R3 = 3;
export const R4 = 4;
export const R5 = 5;
export const R6 = 6;
export const R7 = 7;
export const R8 = 8;
export const R9 = 9;
/** Read-only frame pointer; the stack is the 512 bytes below it. */
export const R10 = 10;
export const FP = R10;

/** Maximum BPF stack per program frame, in bytes. */
export const MAX_STACK = 512;

/**
 * What the compiler hands the runtime: the kernel maps to create (with the layouts user space needs to decode
 * them), one IR program per expanded attach point, and the tables of asynchronous actions whose records the
 * programs write to the ring buffer.
 *
 * Ring buffer record layout (all little-endian): a u64 header `action | (id << 32)`, then the action's payload:
 * - PRINTF, SYSTEM, CAT: format arguments at `PrintfPlan.offsets` (each argument's storage type, C-aligned);
 *                SYSTEM runs the formatted command, CAT prints the formatted file's contents (id = printf index)
 * - EXIT:        nothing
 * - PRINT_MAP:   u64 top, u64 div (0 = not given)
 * - CLEAR/ZERO:  nothing (id = map index)
 * - TIME:        nothing (id = time format index)
 * - PRINT_VALUE: the value (id = print-value index)
 * - ERRORF/WARNF: as PRINTF; the text goes to stderr as a diagnostic at the call's source location
 * - JOIN:        JOIN_MAX_ARGS slots of JOIN_ARG_SIZE bytes, NUL-terminated strings; an empty slot ends the list
 *                (id = join separator index). Built in a per-CPU scratch map, too large for the stack.
 */

import type { Span } from '../lang/ast.js';
import type { SType } from '../lang/types.js';
import type { ExpandedProbe } from '../probes/types.js';
import type { IrFunction } from './ir.js';

export enum AsyncAction {
  PRINTF = 1,
  EXIT = 2,
  PRINT_MAP = 3,
  CLEAR = 4,
  ZERO = 5,
  TIME = 6,
  PRINT_VALUE = 7,
  JOIN = 8,
  SYSTEM = 9,
  CAT = 10,
  ERRORF = 11,
  WARNF = 12,
}

/** join(): at most this many array elements, each read as a string of this many bytes (bpftrace's limits). */
export const JOIN_MAX_ARGS = 16;
export const JOIN_ARG_SIZE = 64;

/** Kernel map type numbers used by the compiler (uapi `enum bpf_map_type`). */
export const MapKind = {
  HASH: 1,
  ARRAY: 2,
  PERCPU_HASH: 5,
  PERCPU_ARRAY: 6,
  STACK_TRACE: 7,
  LRU_HASH: 9,
  LRU_PERCPU_HASH: 10,
  RINGBUF: 27,
} as const;

/** A user map (`@name`) as laid out in the kernel. */
export interface MapPlan {
  /** Index in CompiledProgram.maps (also the id in PRINT_MAP/CLEAR/ZERO records). */
  index: number;
  /** The map's name in the program without '@' ('' for `@`). */
  name: string;
  /** Kernel object name (<= 15 chars). */
  kernelName: string;
  mapType: number;
  /** Key element types (`[]` for a scalar map, whose kernel key is a u64 0). */
  keyTypes: SType[];
  /** Byte offset of each key element in the key. */
  keyOffsets: number[];
  /** Key size in bytes, including the trailing u64 bucket index for hist/lhist maps. */
  keySize: number;
  valueType: SType;
  /** Value size in bytes (per CPU for per-CPU maps). */
  valueSize: number;
  maxEntries: number;
  perCpu: boolean;
  pos: Span;
}

/**
 * The maps of kstack/ustack of one frame limit: a HASH map from the 63-bit stack id (a hash of the frames) to the
 * frames, and the 1-entry PERCPU_ARRAY the frames are first read into (see ProbeGen.stack).
 */
export interface StackMapPlan {
  /**
   * IR/kernel name of the HASH map (`stack_k127`, `stack_u10`, `stack_ub127` for `ustack(build_id)`): u64 id ->
   * `limit` frames, zero-terminated.
   */
  name: string;
  /** IR/kernel name of the per-CPU scratch map (`stack_k127_buf`). */
  scratch: string;
  user: boolean;
  /** Frames per stack (value size = frameSize * limit). */
  limit: number;
  /**
   * Bytes per frame: 8 (a u64 IP), or 32 in `build_id` mode (the kernel's `struct bpf_stack_build_id`: s32 status,
   * 20-byte build id, u64 file offset or IP; bpf_get_stack with BPF_F_USER_BUILD_ID).
   */
  frameSize: number;
}

/**
 * The function names of a multi-attach probe that reads `func` (codegen `funcFromCookie`): an ARRAY map from the
 * u32 attach cookie (the function's index) to its NUL-padded name, filled by the runtime before the programs load.
 */
export interface FuncTablePlan {
  /** IR and kernel map name (`func_names_0`). */
  name: string;
  /** Value size in bytes: the longest name plus its NUL, rounded up to 8. */
  valueSize: number;
  /** The names, in cookie order. */
  funcs: readonly string[];
}

export interface PrintfPlan {
  id: number;
  format: string;
  argTypes: SType[];
  /** Byte offset of each argument in the record payload (after the 8-byte header). */
  offsets: number[];
  payloadSize: number;
  /** The call's source span (errorf/warnf print it). */
  pos?: Span;
  /** A run-time warning printed at most once per run (codegen/warning-ids.ts). */
  once?: boolean;
}

export interface PrintValuePlan {
  id: number;
  type: SType;
}

export interface ProgramPlan {
  fn: IrFunction;
  /** Callback subprograms (`for ($kv : @m)` bodies), appended after `fn` and referenced by ld_imm64 funcRef. */
  subprogs?: { fn: IrFunction; params: number }[];
  expanded: ExpandedProbe;
  /** Kernel program name (<= 15 chars). */
  kernelName: string;
  /**
   * Name of the program's main function in its BTF (bpftrace's `sanitised probe name_N`, e.g. `interval_us_100000_1`,
   * N counting the programs from 1): what `fentry:bpf:ID:NAME` of another tracer names it by. Default: `kernelName`.
   */
  btfName?: string;
}

/**
 * What code generation collects for the runtime besides the programs: printf/print/time/join records' formats and
 * layouts (by id), scratch and frame maps, and the IR names of the fixed maps. Code generation fills it (GenTables
 * `resources`, codegen/gen.ts); {@link CompiledProgram} carries it to the runtime as is.
 */
export interface ProgramResources {
  printfs: PrintfPlan[];
  printValues: PrintValuePlan[];
  /** time() formats by id. */
  timeFormats: string[];
  /** join() separators by id. */
  joinSeparators: string[];
  /** Per-CPU scratch map for join() records, when used. */
  joinBufName?: string;
  /** Per-CPU u64 counter of len(@m), when used. */
  lenCountName?: string;
  /** Name of the ring buffer map and the lost-event counter map in IR map references. */
  ringbufName: string;
  /** The ring buffer's wake-control map (1-entry mmapable ARRAY: the ringbuf_output flags, see runtime/ringbuf.ts). */
  wakeName: string;
  lostName: string;
  /**
   * Frame maps of programs whose frame does not fit the BPF stack (codegen/frame.ts): ARRAY maps of `size`-byte
   * values, one per possible CPU.
   */
  frameMaps: { name: string; size: number }[];
  /** 1-entry ARRAY map whose u64 is set to 1 by exit() (see session.ts). */
  exitName: string;
}

export interface CompiledProgram extends ProgramResources {
  maps: MapPlan[];
  programs: ProgramPlan[];
  /** Stack trace maps the programs use. */
  stackMaps: StackMapPlan[];
  /** Function-name tables of multi-attach probes (see {@link FuncTablePlan}). */
  funcTables: FuncTablePlan[];
  /** Ring buffer size in bytes (power of two, multiple of the page size). */
  ringbufSize: number;
  /** Whether maps are printed when the run ends (config `print_maps_on_exit`). */
  printMapsOnExit: boolean;
  /** Bytes of a file cat() prints at most (config `max_cat_bytes`). */
  maxCatBytes: number;
  /** User stacks with source lines and inlined functions from DWARF (config `show_debug_info`). */
  showDebugInfo?: boolean;
  /** `false` when user symbol names are printed as they are in the file (config `cpp_demangle = 0`); else demangled. */
  cppDemangle?: false;
  /** Appended to a truncated string when printed (config `str_trunc_trailer`, default `..`). */
  strTruncTrailer?: string;
}

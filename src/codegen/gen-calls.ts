/**
 * The code generator's calls (part of gen.ts ProbeGen): a registry builtin's `generate` (lang/builtins/) through
 * `BuiltinGen`, and the builtin functions whose code is still here (printf family, print, exit, time, clear/zero,
 * delete, join, signal, str, buf, stacks, net and symbol functions).
 */

import { HELPER_ID as H } from '../bpf/helpers.js';
import * as I from '../bpf/insn.js';
import { BpfscopeError } from '../errors.js';
import type { CallExpr, MapExpr } from '../lang/ast.js';
import { builtinFunction } from '../lang/builtins/registry.js';
import type { UaddrTarget } from '../lang/target.js';
import { btfVarId, kernelBtf } from '../lang/btf-types.js';
import { PT_REGS_OFFSETS } from '../lang/ptregs.js';
import { ptonBytes } from '../lang/builtins/net.js';
import { signalNumber } from '../lang/builtins/output.js';
import { type SType, sizeOf, U64 } from '../lang/types.js';
import { copyMem, zeroStack } from './frame.js';
import { AsyncAction, JOIN_ARG_SIZE, JOIN_MAX_ARGS } from './plan.js';
import { resourceId } from './resource-ids.js';
import { type Val } from './gen-core.js';
import { ExprGen } from './gen-expr.js';

export abstract class CallGen extends ExprGen {
  // ---- calls used as statements ------------------------------------------------------------------------------

  protected callStmt(c: CallExpr): void {
    switch (c.name) {
      case 'printf':
        // iter probes print into the iterator's seq_file (what read(2) of the iterator returns)
        if (this.unit.expanded.provider === 'iter') this.seqPrintf(c);
        else this.printf(c);
        return;
      case 'system':
      case 'errorf':
      case 'warnf':
      case 'cat':
        this.printf(c, PRINTF_ACTIONS[c.name]);
        return;
      case 'debugf':
        this.debugf(c);
        return;
      case 'exit': {
        // Set the exit flag first: the EXIT record can be lost when the ring buffer is full, the flag cannot.
        const key = this.frame.temp(8);
        this.fn.emit(I.st(4, this.fb, key, 0));
        const p = this.callHelper(H.map_lookup_elem, [{ map: this.tables.resources.exitName }, { stack: key }]);
        const skip = this.fn.newLabel('noflag');
        this.fn.emit(I.jmpImm('jeq', p, 0, skip));
        if (c.args.length) {
          // exit(code): the process exit status rides in bits 8-15 of the flag (see Session.exitCode)
          const v = this.fn.vreg();
          this.fn.emit(I.mov64(v, this.scalar(c.args[0]!)));
          this.fn.emit(I.alu64Imm('and', v, 0xff));
          this.fn.emit(I.alu64Imm('lsh', v, 8));
          this.fn.emit(I.alu64Imm('or', v, 1));
          this.fn.emit(I.stx(8, p, v, 0));
        } else {
          this.fn.emit(I.st(8, p, 0, 1));
        }
        this.fn.mark(skip);
        this.asyncRecord(AsyncAction.EXIT, 0, 0, () => {});
        this.fn.emit(I.ja(this.endLabel));
        return;
      }
      case 'time': {
        this.asyncRecord(AsyncAction.TIME, resourceId(this.tables.ids, this.types, c), 0, () => {});
        return;
      }
      case 'clear':
      case 'zero': {
        const plan = this.tables.maps.get((c.args[0] as MapExpr).name)!;
        this.asyncRecord(c.name === 'clear' ? AsyncAction.CLEAR : AsyncAction.ZERO, plan.index, 0, () => {});
        return;
      }
      case 'delete':
        this.deleteCall(c);
        return;
      case 'join':
        this.join(c);
        return;
      case 'signal': {
        const a = c.args[0]!;
        const sig = a.kind === 'StrLit' ? this.constant(signalNumber(a.value) ?? 0) : this.scalar(a);
        this.callHelper(H.send_signal, [sig]);
        return;
      }
      case 'print': {
        const a = c.args[0]!;
        if (a.kind === 'MapExpr' && a.keys.length === 0) {
          const plan = this.tables.maps.get(a.name)!;
          const top = c.args[1] ? (this.constInt(c.args[1]) ?? 0) : 0;
          const div = c.args[2] ? (this.constInt(c.args[2]) ?? 0) : 0;
          this.asyncRecord(AsyncAction.PRINT_MAP, plan.index, 16, (rec) => {
            this.fn.emit(I.st(8, this.fb, rec + 8, top));
            this.fn.emit(I.st(8, this.fb, rec + 16, div));
          });
          return;
        }
        const id = resourceId(this.tables.ids, this.types, c);
        const t = this.tables.resources.printValues[id]!.type;
        const size = sizeOf(t);
        const v = this.expr(a);
        this.asyncRecord(AsyncAction.PRINT_VALUE, id, size, (rec) =>
          this.storeAs(v, t, this.fb, rec + 8, this.types.find(a)),
        );
        return;
      }
      default:
        this.expr(c);
    }
  }

  protected printf(c: CallExpr, action: AsyncAction = AsyncAction.PRINTF): void {
    const id = resourceId(this.tables.ids, this.types, c);
    const { argTypes, offsets, payloadSize } = this.tables.resources.printfs[id]!;
    const vals = c.args.slice(1).map((a) => this.expr(a));
    this.asyncRecord(action, id, payloadSize, (rec) => {
      vals.forEach((v, i) =>
        this.storeAs(v, argTypes[i]!, this.fb, rec + 8 + offsets[i]!, this.types.find(c.args[i + 1]!)),
      );
    });
  }

  /**
   * `debugf(fmt, args...)`: bpf_trace_vprintk into the kernel's trace buffer (tracefs `trace`/`trace_pipe`, event
   * `bpf_trace_printk`), formatted by the kernel. The values go as an array of u64; a string by its address.
   */
  protected debugf(c: CallExpr): void {
    const { fmtOff, fmtLen, data, n } = this.kernelFormatArgs(c, 'debugf');
    this.callHelper(H.trace_vprintk, [
      { stack: fmtOff },
      { imm: fmtLen },
      n ? { stack: data } : { imm: 0 },
      { imm: 8 * n },
    ]);
  }

  /**
   * `printf(fmt, args...)` in an iter probe: bpf_seq_printf(ctx->meta->seq, fmt, size, args, 8 * n), as current
   * bpftrace (codegen_llvm.cpp); the kernel formats (bpf_bprintf_prepare) and the text becomes what read(2) of the
   * iterator returns. The values go as an array of u64, a string by its address, like debugf; the analyser allowed
   * only the conversions and value types the kernel formats (lang/builtins/seq-printf.ts).
   */
  protected seqPrintf(c: CallExpr): void {
    const fn = this.fn;
    const { fmtOff, fmtLen, data, n } = this.kernelFormatArgs(c, 'seq_printf');
    // the seq_file: ctx->meta->seq (both BTF-typed loads the verifier follows; the helper wants that pointer)
    const meta = fn.vreg();
    fn.emit(I.ldx(8, meta, this.ctx, 0));
    const seq = fn.vreg();
    fn.emit(I.ldx(8, seq, meta, 0));
    this.callHelper(H.seq_printf, [
      seq,
      { stack: fmtOff },
      { imm: fmtLen },
      n ? { stack: data } : { imm: 0 },
      { imm: 8 * n },
    ]);
  }

  /**
   * For the helpers whose kernel side formats (bpf_trace_vprintk, bpf_seq_printf; bpf_bprintf_prepare): the
   * NUL-terminated format on the stack and the arguments as an array of u64 on the stack, a string by its address.
   * Returns the stack offsets, the format's length with its NUL and the number of arguments.
   */
  private kernelFormatArgs(c: CallExpr, what: string): { fmtOff: number; fmtLen: number; data: number; n: number } {
    const fn = this.fn;
    const lit = c.args[0] as { value: string; bytes?: Uint8Array };
    const fmt = Buffer.concat([Buffer.from(lit.bytes ?? Buffer.from(lit.value)), Buffer.alloc(1)]);
    const vals = c.args.slice(1).map((a) => this.expr(a));
    const data = vals.length ? this.frame.temp(8 * vals.length) : 0;
    vals.forEach((v, i) => {
      if (v.kind === 'reg') {
        fn.emit(I.stx(8, this.fb, v.reg, data + 8 * i));
        return;
      }
      const p = fn.vreg();
      fn.emit(I.mov64(p, this.fb));
      fn.emit(I.alu64Imm('add', p, v.off));
      fn.emit(I.stx(8, this.fb, p, data + 8 * i));
    });
    const f = this.constBytes(fmt, fmt.length);
    if (f.kind !== 'mem') throw new BpfscopeError(`internal: ${what} format`);
    return { fmtOff: f.off, fmtLen: fmt.length, data, n: vals.length };
  }

  /**
   * Whether str/buf/macaddr read their argument's address from user memory: the space semantic analysis found
   * (CallExpr.space); without one, the pointer's own space, else the probe's (user in uprobe/uretprobe/usdt).
   */
  protected readsUser(c: CallExpr): boolean {
    if (c.space) return c.space === 'user';
    const at = c.args[0] && this.types.find(c.args[0]);
    if (at?.kind === 'pointer') return at.space === 'user';
    const p = this.unit.expanded.provider;
    return p === 'uprobe' || p === 'uretprobe' || p === 'usdt';
  }

  /** `macaddr(x)`: 6 bytes copied from an array/string value or read from a pointer (by its address space). */
  protected macaddr(c: CallExpr): Val {
    const fn = this.fn;
    const off = this.frame.temp(8);
    fn.emit(I.st(8, this.fb, off, 0));
    const a = c.args[0]!;
    const at = this.types.get(a);
    if (at.kind === 'string' || at.kind === 'array') {
      const v = this.mem(a);
      copyMem(fn, this.fb, off, this.fb, v.off, 6);
    } else {
      const ptr = this.scalar(a);
      const user = this.readsUser(c);
      this.callHelper(user ? H.probe_read_user : H.probe_read_kernel, [{ stack: off }, { imm: 6 }, ptr]);
    }
    return { kind: 'mem', off, size: 6 };
  }

  /** `len(stack)`: the frames stored under the stack's id (0 when the kernel recorded none). */
  protected stackDepth(c: CallExpr): Val {
    const fn = this.fn;
    const t = this.types.get(c.args[0]!) as Extract<SType, { kind: 'kstack' | 'ustack' }>;
    const limit = Math.max(1, t.limit);
    const name = `stack_${t.kind === 'ustack' ? 'u' : 'k'}${limit}`;
    const v = this.mem(c.args[0]!);
    const r = fn.vreg();
    const done = fn.newLabel('len');
    fn.emit(I.mov64Imm(r, 0));
    const p = this.callHelper(H.map_lookup_elem, [{ map: name }, { stack: v.off }]);
    fn.emit(I.jmpImm('jeq', p, 0, done));
    const ip = fn.vreg();
    for (let i = 0; i < limit; i++) {
      fn.emit(I.ldx(8, ip, p, i * 8));
      fn.emit(I.jmpImm('jeq', ip, 0, done));
      fn.emit(I.mov64Imm(r, i + 1));
    }
    fn.mark(done);
    return this.reg(r);
  }

  /**
   * `strcontains(haystack, needle)`: 1 when needle occurs in haystack, else 0 (an empty needle is found). Unrolled
   * over both buffers; neither is read past its first NUL. A literal needle is compared against immediates.
   */
  protected strcontains(c: CallExpr): Val {
    const fn = this.fn;
    const h = this.mem(c.args[0]!);
    const needleArg = c.args[1]!;
    const literal = needleArg.kind === 'StrLit' ? Buffer.from(needleArg.value) : undefined;
    const n = literal ? undefined : this.mem(needleArg);
    const r = fn.vreg();
    const found = fn.newLabel('sc_found');
    const end = fn.newLabel('sc_end');
    const x = fn.vreg();
    const y = fn.vreg();
    const needleMax = literal ? literal.length : n!.size;
    if (literal && literal.length === 0) {
      fn.emit(I.mov64Imm(r, 1));
      return this.reg(r);
    }
    fn.emit(I.mov64Imm(r, 0));
    if (!literal) {
      fn.emit(I.ldx(1, y, this.fb, n!.off));
      fn.emit(I.jmpImm('jeq', y, 0, found));
    }
    const hayEnd = h.size;
    for (let i = 0; i < hayEnd; i++) {
      const room = hayEnd - i;
      // a literal longer than the rest of the haystack buffer cannot match here or later
      if (literal && literal.length > room) break;
      const next = fn.newLabel('sc_next');
      // the haystack's NUL ends the search (a non-empty needle cannot start there)
      fn.emit(I.ldx(1, x, this.fb, h.off + i));
      fn.emit(I.jmpImm('jeq', x, 0, end));
      for (let j = 0; j < Math.min(needleMax, room); j++) {
        if (j > 0) fn.emit(I.ldx(1, x, this.fb, h.off + i + j));
        if (literal) {
          fn.emit(I.jmpImm('jne', x, literal[j]!, next));
        } else {
          fn.emit(I.ldx(1, y, this.fb, n!.off + j));
          fn.emit(I.jmpImm('jeq', y, 0, found));
          fn.emit(I.jmp('jne', x, y, next));
        }
      }
      if (!literal && needleMax > room) {
        // the haystack buffer ends here: a match only if the needle ends too
        fn.emit(I.ldx(1, y, this.fb, n!.off + room));
        fn.emit(I.jmpImm('jne', y, 0, next));
      }
      // every needle byte matched (a literal, or a needle buffer without a NUL)
      fn.emit(I.ja(found));
      fn.mark(next);
    }
    fn.emit(I.ja(end));
    fn.mark(found);
    fn.emit(I.mov64Imm(r, 1));
    fn.mark(end);
    return this.reg(r);
  }

  /**
   * `join(argv [, sep])`: copy up to JOIN_MAX_ARGS strings of a NULL-terminated pointer array into a per-CPU scratch
   * map value (too large for the stack) and send it as one JOIN record.
   */
  protected join(c: CallExpr): void {
    const fn = this.fn;
    this.tables.resources.joinBufName = 'join_buf';
    const id = resourceId(this.tables.ids, this.types, c);
    const argv = this.scalar(c.args[0]!);
    const user = c.space !== 'kernel';
    const key = this.frame.temp(8);
    fn.emit(I.st(4, this.fb, key, 0));
    const p = this.callHelper(H.map_lookup_elem, [{ map: 'join_buf' }, { stack: key }]);
    const skip = fn.newLabel('join_skip');
    const send = fn.newLabel('join_send');
    fn.emit(I.jmpImm('jeq', p, 0, skip));
    fn.emit(I.st(4, p, 0, AsyncAction.JOIN));
    fn.emit(I.st(4, p, 4, id));
    const slotPtr = this.frame.temp(8);
    for (let i = 0; i < JOIN_MAX_ARGS; i++) {
      const slot = 8 + i * JOIN_ARG_SIZE;
      fn.emit(I.st(1, p, slot, 0));
      fn.emit(I.st(8, this.fb, slotPtr, 0));
      const src = fn.vreg();
      fn.emit(I.mov64(src, argv));
      fn.emit(I.alu64Imm('add', src, i * 8));
      this.callHelper(user ? H.probe_read_user : H.probe_read_kernel, [{ stack: slotPtr }, { imm: 8 }, src]);
      const s = fn.vreg();
      fn.emit(I.ldx(8, s, this.fb, slotPtr));
      fn.emit(I.jmpImm('jeq', s, 0, send));
      const dst = fn.vreg();
      fn.emit(I.mov64(dst, p));
      fn.emit(I.alu64Imm('add', dst, slot));
      this.callHelper(user ? H.probe_read_user_str : H.probe_read_kernel_str, [dst, { imm: JOIN_ARG_SIZE }, s]);
    }
    fn.mark(send);
    const flags = this.ringbufFlags();
    const r = this.callHelper(H.ringbuf_output, [
      { map: this.tables.resources.ringbufName },
      p,
      { imm: 8 + JOIN_MAX_ARGS * JOIN_ARG_SIZE },
      flags,
    ]);
    this.countLost(r);
    fn.mark(skip);
  }

  /**
   * `path(p[, size])`: bpf_d_path(p, buf, size) into a zeroed stack string. `p` is a `struct path *`, or a struct
   * path member (`args.file->f_path`), whose address is passed so the verifier still sees a BTF pointer.
   */
  protected dPath(c: CallExpr): Val {
    const a = c.args[0]!;
    let ptr: number;
    if (this.types.get(a).kind === 'record' && a.kind === 'FieldExpr') {
      const loc = this.fieldLocation(a);
      ptr = this.fn.vreg();
      this.fn.emit(I.mov64(ptr, loc.base));
      if (loc.off) this.fn.emit(I.alu64Imm('add', ptr, loc.off));
    } else ptr = this.scalar(a);
    const size = sizeOf(this.types.get(c));
    const off = this.frame.temp(size);
    zeroStack(this.fn, off, size);
    this.callHelper(H.d_path, [ptr, { stack: off }, { imm: size }]);
    return { kind: 'mem', off, size };
  }

  /**
   * `uaddr(sym)`: a fixed-address executable's symbol is a constant; in a position-independent binary it is
   * `ip - probeVaddr + vaddr` (the load bias from where the probe fired; see probes/uaddr.ts).
   */
  protected uaddr(symbol: string): Val {
    const t = this.tables.target.resolveUaddr(this.unit.expanded, symbol) as UaddrTarget;
    if (t.probeVaddr === undefined) return this.reg(this.constant(BigInt(t.vaddr)));
    const r = this.fn.vreg();
    this.fn.emit(I.ldx(8, r, this.ctx, PT_REGS_OFFSETS.ip!));
    this.fn.emit(I.alu64Imm('add', r, t.vaddr - t.probeVaddr));
    return this.reg(r);
  }

  /**
   * `ntop([af,] addr)`: `{u64 family, u8[16] address}`. An integer is an IPv4 address in network byte order
   * (AF_INET); a 4-byte array is IPv4 and a 16-byte array IPv6 unless the family says otherwise.
   */
  protected ntop(c: CallExpr): Val {
    const fn = this.fn;
    const off = this.frame.temp(24);
    zeroStack(fn, off, 24);
    const a = c.args[c.args.length - 1]!;
    const at = this.types.get(a);
    const AF_INET = 2;
    const AF_INET6 = 10;
    if (at.kind === 'int') {
      fn.emit(I.stx(4, this.fb, this.scalar(a), off + 8));
      fn.emit(I.st(8, this.fb, off, AF_INET));
    } else {
      const v = this.mem(a);
      const size = Math.min(16, v.size);
      copyMem(fn, this.fb, off + 8, this.fb, v.off, size);
      fn.emit(I.st(8, this.fb, off, size === 16 ? AF_INET6 : AF_INET));
    }
    if (c.args.length === 2) fn.emit(I.stx(8, this.fb, this.scalar(c.args[0]!), off));
    return { kind: 'mem', off, size: 24 };
  }

  /**
   * `percpu_kaddr(name[, cpu])`: ld_imm64 of the variable's BTF id, then bpf_per_cpu_ptr (NULL for a CPU that does
   * not exist) or bpf_this_cpu_ptr. The verifier's typed pointer is copied through the stack with
   * bpf_probe_read_kernel so that the result is a plain integer address, usable anywhere a `uint64 *` is.
   */
  protected percpuKaddr(c: CallExpr): Val {
    const fn = this.fn;
    const name = (c.args[0] as { value: string }).value;
    const id = btfVarId(kernelBtf(), name);
    if (id === undefined) throw new BpfscopeError(`internal: no BTF variable ${name}`);
    const base = fn.vreg();
    fn.emit(I.ldBtfId(base, id));
    const p = c.args[1]
      ? this.callHelper(H.per_cpu_ptr, [base, this.scalar(c.args[1])])
      : this.callHelper(H.this_cpu_ptr, [base]);
    const slot = this.frame.temp(16);
    fn.emit(I.stx(8, this.fb, p, slot));
    this.callHelper(H.probe_read_kernel, [{ stack: slot + 8 }, { imm: 8 }, { stack: slot }]);
    const r = fn.vreg();
    fn.emit(I.ldx(8, r, this.fb, slot + 8));
    return this.reg(r);
  }

  protected callExpr(c: CallExpr): Val {
    const fn = this.fn;
    const registered = builtinFunction(c.name)?.generate;
    if (registered) return this.genValue(registered(c, this.builtinGen()));
    if (c.name === 'kstack' || c.name === 'ustack') {
      return this.stack(this.types.get(c) as Extract<SType, { kind: 'kstack' | 'ustack' }>);
    }
    switch (c.name) {
      case 'buf': {
        const t = this.types.get(c) as Extract<SType, { kind: 'buffer' }>;
        const off = this.frame.temp(8 + t.size);
        zeroStack(fn, off, 8 + t.size);
        fn.emit(I.st(8, this.fb, off, t.size));
        const a = c.args[0]!;
        const at = this.types.get(a);
        if (at.kind === 'string' || at.kind === 'array') {
          const v = this.mem(a);
          copyMem(fn, this.fb, off + 8, this.fb, v.off, Math.min(t.size, v.size));
        } else if (t.size > 0) {
          const ptr = this.scalar(a);
          const user = this.readsUser(c);
          this.callHelper(user ? H.probe_read_user : H.probe_read_kernel, [{ stack: off + 8 }, { imm: t.size }, ptr]);
        }
        return { kind: 'mem', off, size: 8 + t.size };
      }
      case 'pton': {
        const bytes = ptonBytes((c.args[0] as { value: string }).value)!;
        return this.constBytes(bytes, bytes.length);
      }
      case 'percpu_kaddr':
        return this.percpuKaddr(c);
      case 'socket_cookie':
        // the argument keeps the verifier's BTF pointer type (a ctx field); the helper returns 0 for NULL
        return this.reg(this.callHelper(H.get_socket_cookie, [this.scalar(c.args[0]!)]));
      case 'pid':
      case 'tid':
        return this.pidTid(c.name, c.args.length ? (c.args[0] as { name: string }).name : 'curr_ns');
      case 'uaddr':
        return this.uaddr((c.args[0] as { value: string }).value);
      case 'getopt': {
        // a compile-time constant (semantic analysis resolved the option)
        const v = (c as CallExpr & { getoptValue?: bigint | boolean | string }).getoptValue;
        if (typeof v === 'string') return this.constString(v, sizeOf(this.types.get(c)));
        return this.reg(this.constant(typeof v === 'boolean' ? (v ? 1n : 0n) : (v ?? 0n)));
      }
      case 'delete': {
        // current bpftrace: delete() is true when the key existed
        const r = this.deleteCall(c);
        const b = this.fn.vreg();
        const done = this.fn.newLabel('deleted');
        this.fn.emit(I.mov64Imm(b, 1));
        this.fn.emit(I.jmpImm('jeq', r, 0, done));
        this.fn.emit(I.mov64Imm(b, 0));
        this.fn.mark(done);
        return this.reg(b);
      }
      case 'path':
        return this.dPath(c);
      case 'macaddr':
        return this.macaddr(c);
      case 'len':
        if (c.args[0]!.kind === 'MapExpr') return this.mapLen(c.args[0] as MapExpr);
        return this.stackDepth(c);
      case 'strcontains':
        return this.strcontains(c);
      case 'reg':
        return this.loadCtx(U64, PT_REGS_OFFSETS[(c.args[0] as { value: string }).value]!);
      case 'usym': {
        const addr = this.scalar(c.args[0]!);
        const off = this.frame.temp(16);
        fn.emit(I.stx(8, this.fb, addr, off));
        // the pid bpfscope's /proc knows the process by (see stack())
        const pid = (this.pidTid('pid', 'curr_ns') as { kind: 'reg'; reg: number }).reg;
        fn.emit(I.stx(4, this.fb, pid, off + 8));
        fn.emit(I.st(4, this.fb, off + 12, 0));
        return { kind: 'mem', off, size: 16 };
      }
      case 'ntop':
        return this.ntop(c);
      case 'has_key': {
        const m = c.args[0] as MapExpr;
        const plan = this.tables.maps.get(m.name)!;
        const keyOff = this.frame.temp(plan.keySize);
        zeroStack(fn, keyOff, plan.keySize);
        const k = c.args[1]!;
        const kt = plan.keyTypes.length === 1 ? plan.keyTypes[0]! : { kind: 'tuple' as const, elems: plan.keyTypes };
        this.storeExpr(k, kt, this.fb, keyOff);
        const p = this.callHelper(H.map_lookup_elem, [{ map: plan.kernelName }, { stack: keyOff }]);
        const r = fn.vreg();
        const done = fn.newLabel('hk');
        fn.emit(I.mov64Imm(r, 0));
        fn.emit(I.jmpImm('jeq', p, 0, done));
        fn.emit(I.mov64Imm(r, 1));
        fn.mark(done);
        return this.reg(r);
      }
      case 'strncmp': {
        const a = this.mem(c.args[0]!);
        const b = this.mem(c.args[1]!);
        const n = Math.min(this.constInt(c.args[2]!) ?? 0, a.size, b.size);
        const r = fn.vreg();
        const x = fn.vreg();
        const y = fn.vreg();
        const differ = fn.newLabel('sn_ne');
        const done = fn.newLabel('sn_done');
        for (let i = 0; i < n; i++) {
          fn.emit(I.ldx(1, x, this.fb, a.off + i));
          fn.emit(I.ldx(1, y, this.fb, b.off + i));
          fn.emit(I.jmp('jne', x, y, differ));
          fn.emit(I.jmpImm('jeq', x, 0, done));
        }
        fn.emit(I.ja(done));
        fn.mark(differ);
        fn.emit(I.mov64Imm(r, 1));
        const end = fn.newLabel('sn_end');
        fn.emit(I.ja(end));
        fn.mark(done);
        fn.emit(I.mov64Imm(r, 0));
        fn.mark(end);
        return this.reg(r);
      }
    }
    if (c.name === 'str') {
      const t = this.types.get(c);
      const size = sizeOf(t);
      const a = c.args[0]!;
      if (this.types.get(a).kind === 'string') {
        const v = this.mem(a);
        const off = this.frame.temp(size);
        zeroStack(fn, off, size);
        copyMem(fn, this.fb, off, this.fb, v.off, Math.min(size - 1, v.size));
        return { kind: 'mem', off, size };
      }
      const ptr = this.scalar(a);
      // (a read of one byte more than the string, c.strRead, tells a truncated string: strings.ts strCheck)
      const read = Math.max(size, c.strRead ?? size);
      const off = this.frame.temp(read);
      zeroStack(fn, off, read);
      let n: number | { reg: number } = read;
      if (c.args.length === 2 && c.args[1]!.kind !== 'IntLit' && c.args[1]!.kind !== 'PositionalExpr') {
        // runtime length: clamp to the buffer
        const len = this.scalar(c.args[1]!);
        const r = fn.vreg();
        fn.emit(I.mov64(r, len));
        const ok = fn.newLabel('len_ok');
        fn.emit(I.jmpImm('jle', r, read, ok));
        fn.emit(I.mov64Imm(r, read));
        fn.mark(ok);
        n = { reg: r };
      }
      // A typed pointer knows its address space; a plain integer is a user address only in user-space probes
      // (current bpftrace: kprobe/tracepoint integers are kernel addresses; use uptr() for user ones) unless it
      // was derived from one of known space (semantic analysis's CallExpr.space).
      const userSpace = this.readsUser(c);
      const helper = userSpace ? H.probe_read_user_str : H.probe_read_kernel_str;
      this.callHelper(helper, [{ stack: off }, typeof n === 'number' ? { imm: n } : n.reg, ptr]);
      return { kind: 'mem', off, size };
    }
    this.callStmt(c);
    return this.reg(this.constant(0));
  }
}
/** The ring-buffer record each printf-family call writes (its format and arguments are laid out alike). */
const PRINTF_ACTIONS: Readonly<Record<string, AsyncAction>> = {
  printf: AsyncAction.PRINTF,
  system: AsyncAction.SYSTEM,
  errorf: AsyncAction.ERRORF,
  warnf: AsyncAction.WARNF,
  cat: AsyncAction.CAT,
};

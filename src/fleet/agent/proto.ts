/**
 * The few protobuf messages the agent sends, encoded by hand (proto3 wire format: varint tags, length-delimited
 * strings, bytes and sub-messages; protobuf.dev "Encoding"). Writing four small messages does not justify a
 * protobuf runtime and code generator as dependencies.
 *
 * Messages (field numbers from the published .proto files):
 * - Pyroscope `push.v1.PushRequest` (grafana/pyroscope api/push/v1/push.proto, types/v1/types.proto):
 *   `PushRequest { repeated RawProfileSeries series = 1 }`,
 *   `RawProfileSeries { repeated types.v1.LabelPair labels = 1; repeated RawSample samples = 2 }`,
 *   `LabelPair { string name = 1; string value = 2 }`, `RawSample { bytes raw_profile = 1; string ID = 2 }`.
 * - Parca `parca.profilestore.v1alpha1.WriteRawRequest` (parca-dev/parca
 *   proto/parca/profilestore/v1alpha1/profilestore.proto):
 *   `WriteRawRequest { string tenant = 1; repeated RawProfileSeries series = 2; bool normalized = 3 }`,
 *   `RawProfileSeries { LabelSet labels = 1; repeated RawSample samples = 2 }`, `LabelSet { repeated Label labels = 1 }`,
 *   `Label { string name = 1; string value = 2 }`, `RawSample { bytes raw_profile = 1 }`.
 */

/** A label of a profile series (Pyroscope's LabelPair, Parca's Label). */
export interface SeriesLabel {
  name: string;
  value: string;
}

const WIRE_VARINT = 0;
const WIRE_LEN = 2;

/** A growing protobuf message. */
export class ProtoWriter {
  private chunks: Uint8Array[] = [];
  private size = 0;

  private push(b: Uint8Array): void {
    this.chunks.push(b);
    this.size += b.length;
  }

  private varint(v: number): void {
    const out: number[] = [];
    while (v > 0x7f) {
      out.push((v & 0x7f) | 0x80);
      v = Math.floor(v / 128);
    }
    out.push(v);
    this.push(Uint8Array.from(out));
  }

  private tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  /** A length-delimited field (bytes, or an encoded sub-message). */
  bytes(field: number, b: Uint8Array): this {
    this.tag(field, WIRE_LEN);
    this.varint(b.length);
    this.push(b);
    return this;
  }

  /** A string field (UTF-8); proto3 leaves out empty strings. */
  string(field: number, s: string): this {
    if (s === '') return this;
    return this.bytes(field, new TextEncoder().encode(s));
  }

  /** A bool field; proto3 leaves out false. */
  bool(field: number, v: boolean): this {
    if (!v) return this;
    this.tag(field, WIRE_VARINT);
    this.varint(1);
    return this;
  }

  /** A sub-message field (always written, also when empty: repeated elements must be present). */
  message(field: number, m: ProtoWriter): this {
    return this.bytes(field, m.finish());
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.size);
    let off = 0;
    for (const c of this.chunks) {
      out.set(c, off);
      off += c.length;
    }
    return out;
  }
}

function label(l: SeriesLabel): ProtoWriter {
  return new ProtoWriter().string(1, l.name).string(2, l.value);
}

/** Pyroscope `push.v1.PushRequest` with one series of one profile (`profile`: pprof bytes, gzip or not). */
export function pyroscopePushRequest(labels: readonly SeriesLabel[], profile: Uint8Array, id: string): Uint8Array {
  const series = new ProtoWriter();
  for (const l of labels) series.message(1, label(l));
  series.message(2, new ProtoWriter().bytes(1, profile).string(2, id));
  return new ProtoWriter().message(1, series).finish();
}

/** Parca `WriteRawRequest` with one series of one profile; `normalized`: addresses already normalized (we send none). */
export function parcaWriteRawRequest(
  labels: readonly SeriesLabel[],
  profile: Uint8Array,
  tenant = '',
  normalized = false,
): Uint8Array {
  const set = new ProtoWriter();
  for (const l of labels) set.message(1, label(l));
  const series = new ProtoWriter().message(1, set).message(2, new ProtoWriter().bytes(1, profile));
  return new ProtoWriter().string(1, tenant).message(2, series).bool(3, normalized).finish();
}

/** gRPC's message framing (grpc/grpc doc/PROTOCOL-HTTP2.md "Length-Prefixed-Message"): flag 0, u32 BE length. */
export function grpcFrame(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(5 + message.length);
  new DataView(out.buffer).setUint32(1, message.length);
  out.set(message, 5);
  return out;
}

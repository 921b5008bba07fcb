/**
 * The typed public API: {@link trace} runs a bpftrace-language program and gives its output as typed events and
 * maps (no text in between). See docs/api.md.
 */
export {
  type ExitEvent,
  type LostEvent,
  type PrintfEvent,
  type PrintMapEvent,
  type PrintValueEvent,
  type TextEvent,
  type TraceEvent,
} from './events.js';
export {
  DEFAULT_EVENT_BUFFER,
  type MapName,
  trace,
  TraceAbortedError,
  type TraceExit,
  type TraceHandle,
  type TraceOptions,
} from './trace.js';
export {
  type Hist,
  type HistBucket,
  type LinearHist,
  type MapValue,
  type StackValue,
  type Stats,
  type TraceKey,
  TraceMap,
  type TraceValue,
} from './values.js';

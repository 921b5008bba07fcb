/**
 * The DWARF reader's public surface: {@link openDwarf} (with separate debug files) and {@link DwarfInfo}'s lookups,
 * the C type model, locations, and {@link DwarfError}. See dwarf.ts for what is read and how lookups are cached.
 */
export {
  type DebugSource,
  type DwarfFunction,
  DwarfInfo,
  type DwarfParam,
  type InlineFrame,
  openDwarf,
  type OpenDwarfOptions,
  type SourceLine,
  type SplitUnit,
} from './dwarf.js';
export { DwarfError } from './errors.js';
export type { LineRow, LineTable } from './line.js';
export { type DwarfLocation, type LocationRange, type Range, registerName } from './lists.js';
export { type DwarfMember, type DwarfType, stripType, typeName, typeSize } from './types.js';

/**
 * DWARF constants used by the reader, with the values of the DWARF 5 standard (dwarfstd.org, "DWARF Debugging
 * Information Format Version 5", chapter 7 "Data Representation") and the GNU extensions gcc emits for DWARF 4
 * (`-gsplit-dwarf`'s `DW_AT_GNU_*`, `DW_FORM_GNU_*`). Only the names the reader acts on are listed.
 */

/** Unit types (§7.5.1, Table 7.2): the `unit_type` byte of a DWARF 5 unit header. */
export const DW_UT_compile = 0x01;
export const DW_UT_type = 0x02;
export const DW_UT_partial = 0x03;
export const DW_UT_skeleton = 0x04;
export const DW_UT_split_compile = 0x05;
export const DW_UT_split_type = 0x06;

/** Tags (§7.5.3, Table 7.3). */
export const DW_TAG_array_type = 0x01;
export const DW_TAG_class_type = 0x02;
export const DW_TAG_enumeration_type = 0x04;
export const DW_TAG_formal_parameter = 0x05;
export const DW_TAG_lexical_block = 0x0b;
export const DW_TAG_member = 0x0d;
export const DW_TAG_pointer_type = 0x0f;
export const DW_TAG_reference_type = 0x10;
export const DW_TAG_compile_unit = 0x11;
export const DW_TAG_structure_type = 0x13;
export const DW_TAG_subroutine_type = 0x15;
export const DW_TAG_typedef = 0x16;
export const DW_TAG_union_type = 0x17;
export const DW_TAG_unspecified_parameters = 0x18;
export const DW_TAG_inlined_subroutine = 0x1d;
export const DW_TAG_subrange_type = 0x21;
export const DW_TAG_base_type = 0x24;
export const DW_TAG_const_type = 0x26;
export const DW_TAG_enumerator = 0x28;
export const DW_TAG_subprogram = 0x2e;
export const DW_TAG_variable = 0x34;
export const DW_TAG_volatile_type = 0x35;
export const DW_TAG_restrict_type = 0x37;
export const DW_TAG_namespace = 0x39;
export const DW_TAG_unspecified_type = 0x3b;
export const DW_TAG_partial_unit = 0x3c;
export const DW_TAG_rvalue_reference_type = 0x42;
export const DW_TAG_atomic_type = 0x47;
export const DW_TAG_skeleton_unit = 0x4a;

/** Attributes (§7.5.4, Table 7.5) and the GNU split-DWARF ones (DWARF 4 era). */
export const DW_AT_sibling = 0x01;
export const DW_AT_location = 0x02;
export const DW_AT_name = 0x03;
export const DW_AT_byte_size = 0x0b;
export const DW_AT_bit_offset = 0x0c;
export const DW_AT_bit_size = 0x0d;
export const DW_AT_stmt_list = 0x10;
export const DW_AT_low_pc = 0x11;
export const DW_AT_high_pc = 0x12;
export const DW_AT_language = 0x13;
export const DW_AT_comp_dir = 0x1b;
export const DW_AT_const_value = 0x1c;
export const DW_AT_inline = 0x20;
export const DW_AT_producer = 0x25;
export const DW_AT_prototyped = 0x27;
export const DW_AT_lower_bound = 0x22;
export const DW_AT_upper_bound = 0x2f;
export const DW_AT_abstract_origin = 0x31;
export const DW_AT_count = 0x37;
export const DW_AT_data_member_location = 0x38;
export const DW_AT_decl_file = 0x3a;
export const DW_AT_decl_line = 0x3b;
export const DW_AT_declaration = 0x3c;
export const DW_AT_encoding = 0x3e;
export const DW_AT_external = 0x3f;
export const DW_AT_frame_base = 0x40;
export const DW_AT_specification = 0x47;
export const DW_AT_type = 0x49;
export const DW_AT_ranges = 0x55;
export const DW_AT_call_file = 0x58;
export const DW_AT_call_line = 0x59;
export const DW_AT_data_bit_offset = 0x6b;
export const DW_AT_linkage_name = 0x6e;
export const DW_AT_str_offsets_base = 0x72;
export const DW_AT_addr_base = 0x73;
export const DW_AT_rnglists_base = 0x74;
export const DW_AT_dwo_name = 0x76;
export const DW_AT_loclists_base = 0x8c;
export const DW_AT_MIPS_linkage_name = 0x2007;
export const DW_AT_GNU_dwo_name = 0x2130;
export const DW_AT_GNU_dwo_id = 0x2131;
export const DW_AT_GNU_ranges_base = 0x2132;
export const DW_AT_GNU_addr_base = 0x2133;

/** Attribute forms (§7.5.6, Table 7.6) and GNU extensions. */
export const DW_FORM_addr = 0x01;
export const DW_FORM_block2 = 0x03;
export const DW_FORM_block4 = 0x04;
export const DW_FORM_data2 = 0x05;
export const DW_FORM_data4 = 0x06;
export const DW_FORM_data8 = 0x07;
export const DW_FORM_string = 0x08;
export const DW_FORM_block = 0x09;
export const DW_FORM_block1 = 0x0a;
export const DW_FORM_data1 = 0x0b;
export const DW_FORM_flag = 0x0c;
export const DW_FORM_sdata = 0x0d;
export const DW_FORM_strp = 0x0e;
export const DW_FORM_udata = 0x0f;
export const DW_FORM_ref_addr = 0x10;
export const DW_FORM_ref1 = 0x11;
export const DW_FORM_ref2 = 0x12;
export const DW_FORM_ref4 = 0x13;
export const DW_FORM_ref8 = 0x14;
export const DW_FORM_ref_udata = 0x15;
export const DW_FORM_indirect = 0x16;
export const DW_FORM_sec_offset = 0x17;
export const DW_FORM_exprloc = 0x18;
export const DW_FORM_flag_present = 0x19;
export const DW_FORM_strx = 0x1a;
export const DW_FORM_addrx = 0x1b;
export const DW_FORM_ref_sup4 = 0x1c;
export const DW_FORM_strp_sup = 0x1d;
export const DW_FORM_data16 = 0x1e;
export const DW_FORM_line_strp = 0x1f;
export const DW_FORM_ref_sig8 = 0x20;
export const DW_FORM_implicit_const = 0x21;
export const DW_FORM_loclistx = 0x22;
export const DW_FORM_rnglistx = 0x23;
export const DW_FORM_ref_sup8 = 0x24;
export const DW_FORM_strx1 = 0x25;
export const DW_FORM_strx2 = 0x26;
export const DW_FORM_strx3 = 0x27;
export const DW_FORM_strx4 = 0x28;
export const DW_FORM_addrx1 = 0x29;
export const DW_FORM_addrx2 = 0x2a;
export const DW_FORM_addrx3 = 0x2b;
export const DW_FORM_addrx4 = 0x2c;
export const DW_FORM_GNU_addr_index = 0x1f01;
export const DW_FORM_GNU_str_index = 0x1f02;
export const DW_FORM_GNU_ref_alt = 0x1f20;
export const DW_FORM_GNU_strp_alt = 0x1f21;

/** Base type encodings (§7.8, Table 7.11). */
export const DW_ATE_address = 0x01;
export const DW_ATE_boolean = 0x02;
export const DW_ATE_complex_float = 0x03;
export const DW_ATE_float = 0x04;
export const DW_ATE_signed = 0x05;
export const DW_ATE_signed_char = 0x06;
export const DW_ATE_unsigned = 0x07;
export const DW_ATE_unsigned_char = 0x08;
export const DW_ATE_UTF = 0x10;

/** `DW_AT_inline` values (§7.20, Table 7.26). */
export const DW_INL_inlined = 0x01;
export const DW_INL_declared_inlined = 0x03;

/** Location expression operations (§7.7.1, Table 7.9), the ones {@link decodeLocation} understands. */
export const DW_OP_addr = 0x03;
export const DW_OP_reg0 = 0x50;
export const DW_OP_reg31 = 0x6f;
export const DW_OP_breg0 = 0x70;
export const DW_OP_breg31 = 0x8f;
export const DW_OP_regx = 0x90;
export const DW_OP_fbreg = 0x91;
export const DW_OP_bregx = 0x92;
export const DW_OP_call_frame_cfa = 0x9c;
export const DW_OP_stack_value = 0x9f;
export const DW_OP_entry_value = 0xa3;
export const DW_OP_GNU_entry_value = 0xf3;

/** Line number program opcodes (§6.2.5.2-3, §7.22, Tables 7.25-7.27). */
export const DW_LNS_copy = 0x01;
export const DW_LNS_advance_pc = 0x02;
export const DW_LNS_advance_line = 0x03;
export const DW_LNS_set_file = 0x04;
export const DW_LNS_set_column = 0x05;
export const DW_LNS_negate_stmt = 0x06;
export const DW_LNS_set_basic_block = 0x07;
export const DW_LNS_const_add_pc = 0x08;
export const DW_LNS_fixed_advance_pc = 0x09;
export const DW_LNS_set_prologue_end = 0x0a;
export const DW_LNS_set_epilogue_begin = 0x0b;
export const DW_LNS_set_isa = 0x0c;
export const DW_LNE_end_sequence = 0x01;
export const DW_LNE_set_address = 0x02;
export const DW_LNE_define_file = 0x03;
export const DW_LNE_set_discriminator = 0x04;
/** Line table entry content types (§6.2.4.1, Table 7.27). */
export const DW_LNCT_path = 0x1;
export const DW_LNCT_directory_index = 0x2;

/** Range list entries (§7.25, Table 7.30). */
export const DW_RLE_end_of_list = 0x00;
export const DW_RLE_base_addressx = 0x01;
export const DW_RLE_startx_endx = 0x02;
export const DW_RLE_startx_length = 0x03;
export const DW_RLE_offset_pair = 0x04;
export const DW_RLE_base_address = 0x05;
export const DW_RLE_start_end = 0x06;
export const DW_RLE_start_length = 0x07;

/** Location list entries (§7.29, Table 7.31). */
export const DW_LLE_end_of_list = 0x00;
export const DW_LLE_base_addressx = 0x01;
export const DW_LLE_startx_endx = 0x02;
export const DW_LLE_startx_length = 0x03;
export const DW_LLE_offset_pair = 0x04;
export const DW_LLE_default_location = 0x05;
export const DW_LLE_base_address = 0x06;
export const DW_LLE_start_end = 0x07;
export const DW_LLE_start_length = 0x08;

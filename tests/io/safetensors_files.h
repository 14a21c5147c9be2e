/* Hand-made safetensors files: the bytes a writer would produce from a header text and a data
 * section, and the malformed files the loader must refuse (shared by the tests and the program
 * that writes the fuzzer's seed corpus). */
#ifndef CT_TEST_SAFETENSORS_FILES_H
#define CT_TEST_SAFETENSORS_FILES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct st_bytes {
    unsigned char *data;
    size_t size;
} st_bytes;

/* The 8-byte little-endian `declared` length, header_size bytes of header, then data. */
static inline st_bytes st_build_raw(uint64_t declared, const char *header, size_t header_size,
                                    const void *data, size_t data_size)
{
    st_bytes b;
    b.size = 8 + header_size + data_size;
    b.data = malloc(b.size);
    for (int k = 0; k < 8; k++) b.data[k] = (unsigned char)(declared >> (8 * k));
    if (header_size) memcpy(b.data + 8, header, header_size);
    if (data_size) memcpy(b.data + 8 + header_size, data, data_size);
    return b;
}

/* What Python's safetensors writes: the header padded with spaces to a multiple of 8. */
static inline st_bytes st_build(const char *header, const void *data, size_t data_size)
{
    size_t length = strlen(header), padded = (length + 7) / 8 * 8;
    char *text = malloc(padded + 1);
    memcpy(text, header, length);
    memset(text + length, ' ', padded - length);
    st_bytes b = st_build_raw(padded, text, padded, data, data_size);
    free(text);
    return b;
}

static inline int st_write_file(const char *path, st_bytes b)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t written = b.size ? fwrite(b.data, 1, b.size, f) : 0;
    return fclose(f) == 0 && written == b.size ? 0 : -1;
}

/* ---- the malformed files: each with a part of the message the loader must give ---- */

typedef struct st_bad_file {
    const char *id; /* also the corpus file name */
    const char *expected;
    st_bytes (*make)(void);
} st_bad_file;

static const unsigned char st_zeros[64];

static inline st_bytes st_bad_short(void)
{
    st_bytes b = {malloc(5), 5};
    memcpy(b.data, "\x10\0\0\0\0", 5);
    return b;
}
static inline st_bytes st_bad_header_past_end(void) { return st_build_raw(1000, "{\"a\":{}}        ", 16, NULL, 0); }
static inline st_bytes st_bad_header_too_big(void) { return st_build_raw(200000000, "{}      ", 8, NULL, 0); }
static inline st_bytes st_bad_header_empty(void) { return st_build_raw(0, NULL, 0, NULL, 0); }
static inline st_bytes st_bad_not_json(void) { return st_build("{\"a\": {\"dtype\": \"F32\",", NULL, 0); }
static inline st_bytes st_bad_two_values(void) { return st_build("{} {}", NULL, 0); }
static inline st_bytes st_bad_utf8(void) { return st_build("{\"w\xff\": {\"dtype\": \"U8\", \"shape\": [], \"data_offsets\": [0, 1]}}", st_zeros, 1); }
static inline st_bytes st_bad_utf8_overlong(void) { return st_build("{\"\xc0\xaf\": {\"dtype\": \"U8\", \"shape\": [], \"data_offsets\": [0, 1]}}", st_zeros, 1); }
static inline st_bytes st_bad_utf8_surrogate(void) { return st_build("{\"\xed\xa0\x80\": {\"dtype\": \"U8\", \"shape\": [], \"data_offsets\": [0, 1]}}", st_zeros, 1); }
static inline st_bytes st_bad_control_byte(void) { return st_build("{\"a\x01\": {\"dtype\": \"U8\", \"shape\": [], \"data_offsets\": [0, 1]}}", st_zeros, 1); }
static inline st_bytes st_bad_top_not_object(void) { return st_build("[1, 2, 3]", NULL, 0); }
static inline st_bytes st_bad_entry_not_object(void) { return st_build("{\"fc.weight\": [0, 4]}", st_zeros, 4); }
static inline st_bytes st_bad_missing_offsets(void) { return st_build("{\"fc.weight\": {\"dtype\": \"F32\", \"shape\": [1]}}", st_zeros, 4); }
static inline st_bytes st_bad_field_twice(void) { return st_build("{\"fc.weight\": {\"dtype\": \"F32\", \"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [0, 4]}}", st_zeros, 4); }
static inline st_bytes st_bad_unknown_dtype(void) { return st_build("{\"fc.weight\": {\"dtype\": \"Q7\", \"shape\": [1], \"data_offsets\": [0, 4]}}", st_zeros, 4); }
static inline st_bytes st_bad_dtype_not_string(void) { return st_build("{\"fc.weight\": {\"dtype\": 32, \"shape\": [1], \"data_offsets\": [0, 4]}}", st_zeros, 4); }
static inline st_bytes st_bad_foreign_dtype(void) { return st_build("{\"fc.weight\": {\"dtype\": \"I16\", \"shape\": [2], \"data_offsets\": [0, 4]}}", st_zeros, 4); }
static inline st_bytes st_bad_shape_negative(void) { return st_build("{\"fc.weight\": {\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]}}", st_zeros, 4); }
static inline st_bytes st_bad_shape_fraction(void) { return st_build("{\"fc.weight\": {\"dtype\": \"F32\", \"shape\": [1.5], \"data_offsets\": [0, 4]}}", st_zeros, 4); }
static inline st_bytes st_bad_shape_not_list(void) { return st_build("{\"fc.weight\": {\"dtype\": \"F32\", \"shape\": 1, \"data_offsets\": [0, 4]}}", st_zeros, 4); }
static inline st_bytes st_bad_shape_string(void) { return st_build("{\"fc.weight\": {\"dtype\": \"F32\", \"shape\": [\"1\"], \"data_offsets\": [0, 4]}}", st_zeros, 4); }
static inline st_bytes st_bad_shape_nine_dims(void) { return st_build("{\"fc.weight\": {\"dtype\": \"U8\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 1]}}", st_zeros, 1); }
static inline st_bytes st_bad_shape_overflow(void) { return st_build("{\"fc.weight\": {\"dtype\": \"F64\", \"shape\": [4294967296, 4294967296, 4294967296], \"data_offsets\": [0, 0]}}", NULL, 0); }
static inline st_bytes st_bad_shape_overflow_empty(void) { return st_build("{\"fc.weight\": {\"dtype\": \"F64\", \"shape\": [0, 4294967296, 4294967296], \"data_offsets\": [0, 0]}}", NULL, 0); }
static inline st_bytes st_bad_offsets_one(void) { return st_build("{\"fc.weight\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4]}}", st_zeros, 4); }
static inline st_bytes st_bad_offsets_huge(void) { return st_build("{\"fc.weight\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [1e300, 1e300]}}", st_zeros, 4); }
static inline st_bytes st_bad_offsets_reversed(void) { return st_build("{\"fc.weight\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 4]}}", st_zeros, 8); }
static inline st_bytes st_bad_size_mismatch(void) { return st_build("{\"fc.weight\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", st_zeros, 8); }
static inline st_bytes st_bad_out_of_range(void) { return st_build("{\"fc.weight\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", st_zeros, 8); }
static inline st_bytes st_bad_overlap(void) { return st_build("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}, \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}", st_zeros, 12); }
static inline st_bytes st_bad_gap(void) { return st_build("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, \"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 12]}}", st_zeros, 12); }
static inline st_bytes st_bad_trailing_data(void) { return st_build("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", st_zeros, 8); }
static inline st_bytes st_bad_duplicate_names(void) { return st_build("{\"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}, \"a\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}", st_zeros, 8); }
static inline st_bytes st_bad_metadata_number(void) { return st_build("{\"__metadata__\": {\"format\": \"pt\", \"epoch\": 3}, \"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", st_zeros, 1); }
static inline st_bytes st_bad_metadata_not_object(void) { return st_build("{\"__metadata__\": \"pt\", \"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", st_zeros, 1); }
static inline st_bytes st_bad_metadata_twice(void) { return st_build("{\"__metadata__\": {}, \"__metadata__\": {}}", NULL, 0); }
static inline st_bytes st_bad_metadata_key_twice(void) { return st_build("{\"__metadata__\": {\"k\": \"1\", \"k\": \"2\"}}", NULL, 0); }
static inline st_bytes st_bad_metadata_device(void) { return st_build("{\"__metadata__\": {\"ctorch.device.a\": \"gpu:0\"}, \"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", st_zeros, 1); }
static inline st_bytes st_bad_bool_value(void)
{
    static const unsigned char data[4] = {0, 1, 2, 1};
    return st_build("{\"mask\": {\"dtype\": \"BOOL\", \"shape\": [4], \"data_offsets\": [0, 4]}}", data, 4);
}

/* {"a": [[[...]]]} nested 2000 levels: more than cJSON's limit (1000). */
static inline st_bytes st_bad_nested_too_deep(void)
{
    enum { DEPTH = 2000 };
    char *text = malloc(2 * DEPTH + 16);
    size_t n = (size_t)sprintf(text, "{\"a\":");
    memset(text + n, '[', DEPTH);
    memset(text + n + DEPTH, ']', DEPTH);
    strcpy(text + n + 2 * DEPTH, "}");
    st_bytes b = st_build(text, NULL, 0);
    free(text);
    return b;
}
static inline st_bytes st_bad_name_with_nul(void) { return st_build("{\"fc\\u0000.weight\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", st_zeros, 1); }
static inline st_bytes st_bad_metadata_with_nul(void) { return st_build("{\"__metadata__\": {\"note\": \"a\\u0000b\"}, \"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", st_zeros, 1); }
static inline st_bytes st_bad_name_control_escaped(void) { return st_build("{\"a\\u0001\": {\"dtype\": \"Q7\", \"shape\": [1], \"data_offsets\": [0, 1]}}", st_zeros, 1); }

static const st_bad_file st_bad_files[] = {
    {"bad_short", "is 5 bytes; a safetensors file starts with an 8-byte header length", st_bad_short},
    {"bad_header_past_end", "header length 1000 runs past the end of the file", st_bad_header_past_end},
    {"bad_header_too_big", "safetensors headers are at most 100000000", st_bad_header_too_big},
    {"bad_header_empty", "the header is not valid JSON", st_bad_header_empty},
    {"bad_not_json", "the header is not valid JSON", st_bad_not_json},
    {"bad_two_values", "more than one JSON value", st_bad_two_values},
    {"bad_utf8", "the header is not valid UTF-8 (byte 0xff", st_bad_utf8},
    {"bad_utf8_overlong", "the header is not valid UTF-8 (byte 0xc0", st_bad_utf8_overlong},
    {"bad_utf8_surrogate", "the header is not valid UTF-8 (byte 0xed", st_bad_utf8_surrogate},
    {"bad_control_byte", "control byte 0x01", st_bad_control_byte},
    {"bad_top_not_object", "the header is JSON but not an object", st_bad_top_not_object},
    {"bad_entry_not_object", "tensor 'fc.weight' is not an object", st_bad_entry_not_object},
    {"bad_missing_offsets", "tensor 'fc.weight' has no 'data_offsets'", st_bad_missing_offsets},
    {"bad_field_twice", "tensor 'fc.weight' has 'dtype' twice", st_bad_field_twice},
    {"bad_unknown_dtype", "tensor 'fc.weight': unknown dtype 'Q7'", st_bad_unknown_dtype},
    {"bad_dtype_not_string", "tensor 'fc.weight': dtype is not a string", st_bad_dtype_not_string},
    {"bad_foreign_dtype", "tensor 'fc.weight': dtype I16 is not supported by ctorch", st_bad_foreign_dtype},
    {"bad_shape_negative", "tensor 'fc.weight': shape is not a list of non-negative integers", st_bad_shape_negative},
    {"bad_shape_fraction", "tensor 'fc.weight': shape is not a list of non-negative integers", st_bad_shape_fraction},
    {"bad_shape_not_list", "tensor 'fc.weight': shape is not a list of non-negative integers", st_bad_shape_not_list},
    {"bad_shape_string", "tensor 'fc.weight': shape is not a list of non-negative integers (dim 0", st_bad_shape_string},
    {"bad_shape_nine_dims", "tensor 'fc.weight': shape has 9 dims; ctorch tensors have at most 8", st_bad_shape_nine_dims},
    {"bad_shape_overflow", "tensor 'fc.weight': shape [4294967296, 4294967296, 4294967296] of F64 has more bytes than memory can address", st_bad_shape_overflow},
    {"bad_shape_overflow_empty", "tensor 'fc.weight': shape [0, 4294967296, 4294967296] of F64 has more bytes than memory can address", st_bad_shape_overflow_empty},
    {"bad_offsets_one", "tensor 'fc.weight': data_offsets is not a list of two non-negative integers", st_bad_offsets_one},
    {"bad_offsets_huge", "tensor 'fc.weight': data_offsets is not a list of two non-negative integers", st_bad_offsets_huge},
    {"bad_offsets_reversed", "tensor 'fc.weight': data_offsets [8, 4] begin after they end", st_bad_offsets_reversed},
    {"bad_size_mismatch", "tensor 'fc.weight': shape [3] of F32 is 12 bytes but data_offsets [0, 8] hold 8", st_bad_size_mismatch},
    {"bad_out_of_range", "tensor 'fc.weight': data_offsets [0, 16] lie outside the data section (8 bytes)", st_bad_out_of_range},
    {"bad_overlap", "tensor 'b': data_offsets [4, 12] overlap those of tensor 'a' [0, 8]", st_bad_overlap},
    {"bad_gap", "tensor 'b': data_offsets [8, 12] leave bytes [4, 8) of the data section to no tensor", st_bad_gap},
    {"bad_trailing_data", "the data section has 8 bytes but its tensors cover 4", st_bad_trailing_data},
    {"bad_duplicate_names", "the header has tensor 'a' twice", st_bad_duplicate_names},
    {"bad_metadata_number", "__metadata__ 'epoch' is not a string", st_bad_metadata_number},
    {"bad_metadata_not_object", "'__metadata__' is not an object of strings", st_bad_metadata_not_object},
    {"bad_metadata_twice", "the header has '__metadata__' twice", st_bad_metadata_twice},
    {"bad_metadata_key_twice", "the header has __metadata__ key 'k' twice", st_bad_metadata_key_twice},
    {"bad_metadata_device", "tensor 'a': the metadata says it was saved on 'gpu:0', which is not a device", st_bad_metadata_device},
    {"bad_nested_too_deep", "the header nests more than 64 levels deep (at offset 68); ctorch reads headers up to 64 levels", st_bad_nested_too_deep},
    {"bad_name_with_nul", "tensor 'fc\\u0000.weight' has \\u0000 (a NUL character) in its name, at offset 4 of the header", st_bad_name_with_nul},
    {"bad_metadata_with_nul", "the header's string \"a\\u0000b\" has \\u0000 (a NUL character) at offset 28", st_bad_metadata_with_nul},
    {"bad_name_control_escaped", "tensor 'a\\x01': unknown dtype 'Q7'", st_bad_name_control_escaped},
    {"bad_bool_value", "tensor 'mask' (BOOL) has the byte 2 at element 2; a bool is 0 or 1", st_bad_bool_value},
};

#endif

/* The io layer's insides: the safetensors format's constants, dtype codes, UTF-8 checks, and the
 * hooks the tests use. */
#ifndef CT_IO_INTERNAL_H
#define CT_IO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/core_internal.h"
#include "ctorch/io.h"

/* Python's safetensors refuses headers above this (MAX_HEADER_SIZE); so do ctorch's loader and
 * writer. */
#define CT_IO_HEADER_MAX ((uint64_t)100000000)
#define CT_IO_METADATA_KEY "__metadata__"
#define CT_IO_VERSION_KEY "ctorch.version"
#define CT_IO_DEVICE_KEY_PREFIX "ctorch.device."

/* "F32" for CT_F32 and so on. */
const char *ct_io_dtype_code(ct_dtype dtype);
/* The ctorch dtype of a safetensors code; false for codes ctorch does not have. */
bool ct_io_dtype_from_code(const char *code, ct_dtype *out);
/* A dtype of the safetensors format that ctorch has no counterpart for (F16, BF16, I8, ...). */
bool ct_io_is_foreign_dtype_code(const char *code);

/* Well-formed UTF-8: no overlong forms, surrogates or code points above U+10FFFF. */
bool ct_io_utf8_valid(const char *text, size_t length);
/* The offset of the first byte that breaks it; length when the text is well-formed. */
size_t ct_io_utf8_invalid_at(const char *text, size_t length);
/* text for a one-line message: control characters as \xNN, cut to fit size (>= 8) with "...". */
const char *ct_io_printable(const char *text, char *buf, size_t size);
#define CT_IO_PRINTABLE_MAX 96
/* Is a metadata key ctorch's own ("ctorch.version", "ctorch.device.*")? */
bool ct_io_metadata_key_is_reserved(const char *key);

/* The data section is little-endian; on a big-endian host elements are swapped in place. */
void ct_io_to_little_endian(void *data, size_t count, size_t element_size);
bool ct_io_host_is_little_endian(void);

/* For tests: every ct_save fails once it has written `bytes` bytes of its temporary file, as if
 * the disk had failed there (SIZE_MAX turns this off, which is the default). */
void ct_io_fail_write_after_for_testing(size_t bytes);
/* The limit above, for the writer. */
size_t ct_io_write_limit(void);

/* The tensor at index, borrowed (index in range). */
ct_tensor *ct_state_dict_tensor_borrowed(const ct_state_dict *sd, int64_t index);
/* Metadata that a load fills in, reserved keys included; no check for duplicates (the loader has
 * checked). */
ct_status ct_state_dict_append_metadata(ct_state_dict *sd, const char *key, const char *value);

#endif

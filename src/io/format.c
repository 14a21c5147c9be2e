/* The safetensors format's small pieces: dtype codes, UTF-8, byte order, the test write hook. */
#include <stdatomic.h>
#include <string.h>

#include "core/files.h"
#include "io/io_internal.h"

static const char *const dtype_codes[CT_DTYPE_COUNT] = {
    [CT_F32] = "F32", [CT_F64] = "F64", [CT_I32] = "I32",
    [CT_I64] = "I64", [CT_U8] = "U8",   [CT_BOOL] = "BOOL",
    [CT_F16] = "F16", [CT_BF16] = "BF16",
};

const char *ct_io_dtype_code(ct_dtype dtype)
{
    return ct_dtype_is_valid((int)dtype) ? dtype_codes[dtype] : "invalid";
}

bool ct_io_dtype_from_code(const char *code, ct_dtype *out)
{
    for (int d = 0; d < CT_DTYPE_COUNT; d++)
        if (strcmp(code, dtype_codes[d]) == 0) {
            *out = (ct_dtype)d;
            return true;
        }
    return false;
}

bool ct_io_is_foreign_dtype_code(const char *code)
{
    static const char *const foreign[] = {"F8_E4M3", "F8_E5M2", "I8", "I16",
                                          "U16", "U32", "U64", "C64", "F4", "F6_E2M3", "F6_E3M2",
                                          "F8_E8M0"};
    for (size_t k = 0; k < CT_ARRAY_LEN(foreign); k++)
        if (strcmp(code, foreign[k]) == 0) return true;
    return false;
}

size_t ct_io_utf8_invalid_at(const char *text, size_t length)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < length) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t extra;
        uint32_t code, minimum;
        if (c >= 0xC2 && c <= 0xDF) extra = 1, code = c & 0x1F, minimum = 0x80;
        else if (c >= 0xE0 && c <= 0xEF) extra = 2, code = c & 0x0F, minimum = 0x800;
        else if (c >= 0xF0 && c <= 0xF4) extra = 3, code = c & 0x07, minimum = 0x10000;
        else return i; /* a continuation byte first, 0xC0/0xC1 (overlong), or above 0xF4 */
        if (length - i <= extra) return i;
        for (size_t k = 1; k <= extra; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            code = (code << 6) | (s[i + k] & 0x3F);
        }
        if (code < minimum || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return i;
        i += extra + 1;
    }
    return length;
}

bool ct_io_utf8_valid(const char *text, size_t length) { return ct_io_utf8_invalid_at(text, length) == length; }

const char *ct_io_printable(const char *text, char *buf, size_t size)
{
    return ct_escape_text(text, strlen(text), buf, size);
}

bool ct_io_metadata_key_is_reserved(const char *key)
{
    return strcmp(key, CT_IO_VERSION_KEY) == 0 ||
           strncmp(key, CT_IO_DEVICE_KEY_PREFIX, strlen(CT_IO_DEVICE_KEY_PREFIX)) == 0;
}

bool ct_io_host_is_little_endian(void)
{
    const uint16_t probe = 1;
    unsigned char first;
    memcpy(&first, &probe, 1);
    return first == 1;
}

void ct_io_to_little_endian(void *data, size_t count, size_t element_size)
{
    if (ct_io_host_is_little_endian() || element_size < 2) return;
    unsigned char *bytes = data;
    for (size_t e = 0; e < count; e++, bytes += element_size)
        for (size_t a = 0, b = element_size - 1; a < b; a++, b--) {
            unsigned char swap = bytes[a];
            bytes[a] = bytes[b];
            bytes[b] = swap;
        }
}

static atomic_size_t write_limit = SIZE_MAX;

void ct_io_fail_write_after_for_testing(size_t bytes) { atomic_store(&write_limit, bytes); }

size_t ct_io_write_limit(void) { return atomic_load(&write_limit); }

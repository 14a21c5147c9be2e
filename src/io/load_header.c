/* The header of a safetensors file, trusted in nothing: UTF-8 and JSON first, then every entry's
 * dtype, shape and byte range, unique names, ranges that tile the data section, string metadata. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/files.h"
#include "io/load_internal.h"
#include "tensor/tensor_internal.h"

/* Integers in JSON arrive as doubles: exact up to 2^53, which is beyond any file. */
#define JSON_INTEGER_MAX 9007199254740992.0

typedef struct parse_context {
    const char *path;
    char file[CT_IO_PRINTABLE_MAX];
    const cJSON *top;
} parse_context;

#define FAIL(ctx, ...) fail_at(ctx, __VA_ARGS__)

static ct_status fail_at(const parse_context *ctx, const char *fmt, ...) CT_PRINTF(2, 3);
static ct_status fail_at(const parse_context *ctx, const char *fmt, ...)
{
    char what[768];
    va_list args;
    va_start(args, fmt);
    vsnprintf(what, sizeof what, fmt, args);
    va_end(args);
    return ct_error(CT_ERR_IO, "ct_load: '%s': %s", ctx->file, what);
}

/* A safetensors header nests 3 levels ({name: {shape: [...]}}); cJSON refuses more than
 * CJSON_NESTING_LIMIT (1000) without saying why, so deeper headers are refused here first. */
#define HEADER_DEPTH_MAX 64

/* What cJSON would hide: nesting too deep (it says only "not valid JSON"), and \u0000 in a string
 * (it keeps the string up to the NUL, cutting a name silently). */
static ct_status scan_structure(const parse_context *ctx, const char *text, size_t length)
{
    int depth = 0;
    for (size_t k = 0; k < length; k++) {
        if (text[k] == '{' || text[k] == '[') {
            if (++depth > HEADER_DEPTH_MAX)
                return FAIL(ctx, "the header nests more than %d levels deep (at offset %zu); ctorch reads "
                            "headers up to %d levels (a safetensors header has 3)", HEADER_DEPTH_MAX, k,
                            HEADER_DEPTH_MAX);
        } else if (text[k] == '}' || text[k] == ']') {
            depth--;
        } else if (text[k] == '"') {
            size_t open = k, nul = 0;
            for (k++; k < length && text[k] != '"'; k++)
                if (text[k] == '\\') {
                    if (!nul && length - k >= 6 && memcmp(text + k + 1, "u0000", 5) == 0) nul = k;
                    k++; /* the escaped character, which may be a quote */
                }
            if (!nul) continue;
            char shown[CT_IO_PRINTABLE_MAX];
            size_t end = k < length ? k : length;
            ct_escape_text(text + open + 1, end - open - 1, shown, sizeof shown);
            if (depth == 1)
                return FAIL(ctx, "tensor '%s' has \\u0000 (a NUL character) in its name, at offset %zu of "
                            "the header; names cannot hold NUL", shown, nul);
            return FAIL(ctx, "the header's string \"%s\" has \\u0000 (a NUL character) at offset %zu; "
                        "names and metadata cannot hold NUL", shown, nul);
        }
    }
    return CT_OK;
}

/* The text, then the JSON: UTF-8 throughout, no raw control bytes, one object and spaces after. */
static ct_status parse_json(const parse_context *ctx, const char *text, size_t length, cJSON **out)
{
    size_t bad = ct_io_utf8_invalid_at(text, length);
    if (bad < length)
        return FAIL(ctx, "the header is not valid UTF-8 (byte 0x%02x at offset %zu of the header)",
                    (unsigned char)text[bad], bad);
    for (size_t k = 0; k < length; k++) {
        unsigned char c = (unsigned char)text[k];
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
            return FAIL(ctx, "the header has the control byte 0x%02x at offset %zu; JSON allows none", c, k);
    }
    ct_status status = scan_structure(ctx, text, length);
    if (status != CT_OK) return status;
    const char *end = NULL;
    cJSON *json = cJSON_ParseWithLengthOpts(text, length, &end, 0);
    if (!json) {
        size_t at = end && end >= text && end <= text + length ? (size_t)(end - text) : 0;
        return FAIL(ctx, "the header is not valid JSON (at offset %zu of %zu bytes)", at, length);
    }
    for (size_t k = (size_t)(end - text); k < length; k++)
        if (text[k] != ' ' && text[k] != '\t' && text[k] != '\n' && text[k] != '\r') {
            cJSON_Delete(json);
            return FAIL(ctx, "the header has more than one JSON value (text after offset %zu)",
                        (size_t)(end - text));
        }
    if (!cJSON_IsObject(json)) {
        cJSON_Delete(json);
        return FAIL(ctx, "the header is JSON but not an object; safetensors headers are "
                    "{\"name\": {\"dtype\": ..., \"shape\": ..., \"data_offsets\": ...}, ...}");
    }
    *out = json;
    return CT_OK;
}

/* A non-negative JSON integer (exact in a double). */
static bool json_count(const cJSON *item, uint64_t *out)
{
    if (!cJSON_IsNumber(item)) return false;
    double v = item->valuedouble;
    if (!(v >= 0 && v <= JSON_INTEGER_MAX) || (double)(uint64_t)v != v) return false;
    *out = (uint64_t)v;
    return true;
}

static ct_status parse_dtype(const parse_context *ctx, const char *name, const cJSON *item, ct_dtype *out)
{
    char code[CT_IO_PRINTABLE_MAX];
    if (!cJSON_IsString(item))
        return FAIL(ctx, "tensor '%s': dtype is not a string such as \"F32\"", name);
    if (ct_io_dtype_from_code(item->valuestring, out)) return CT_OK;
    ct_io_printable(item->valuestring, code, sizeof code);
    if (ct_io_is_foreign_dtype_code(item->valuestring))
        return FAIL(ctx, "tensor '%s': dtype %s is not supported by ctorch (it has F32, F64, I32, "
                    "I64, U8 and BOOL); convert the tensor before saving", name, code);
    return FAIL(ctx, "tensor '%s': unknown dtype '%s' (ctorch reads F32, F64, I32, I64, U8 and BOOL)",
                name, code);
}

static ct_status parse_shape(const parse_context *ctx, const char *name, const cJSON *item, ct_io_entry *e)
{
    if (!cJSON_IsArray(item))
        return FAIL(ctx, "tensor '%s': shape is not a list of non-negative integers", name);
    int ndim = cJSON_GetArraySize(item);
    if (ndim > CT_MAX_DIMS)
        return FAIL(ctx, "tensor '%s': shape has %d dims; ctorch tensors have at most %d", name, ndim,
                    CT_MAX_DIMS);
    int d = 0;
    for (const cJSON *size = item->child; size; size = size->next, d++) {
        uint64_t value;
        if (!json_count(size, &value))
            return FAIL(ctx, "tensor '%s': shape is not a list of non-negative integers (dim %d is not)",
                        name, d);
        e->shape[d] = (int64_t)value;
    }
    e->ndim = ndim;
    return CT_OK;
}

static ct_status parse_offsets(const parse_context *ctx, const char *name, const cJSON *item, ct_io_entry *e)
{
    uint64_t begin, end;
    if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 2 || !json_count(item->child, &begin) ||
        !json_count(item->child->next, &end))
        return FAIL(ctx, "tensor '%s': data_offsets is not a list of two non-negative integers "
                    "[begin, end]", name);
    if (begin > end)
        return FAIL(ctx, "tensor '%s': data_offsets [%llu, %llu] begin after they end", name,
                    (unsigned long long)begin, (unsigned long long)end);
    e->begin = begin;
    e->end = end;
    return CT_OK;
}

/* Bytes of shape x dtype. False when the strides ctorch would give the tensor overflow (they
 * count a size of 0 as 1, so an empty tensor of dims 2^32 x 2^32 is refused too). */
static bool shape_bytes(const ct_io_entry *e, uint64_t *out)
{
    uint64_t extent = ct_dtype_size(e->dtype);
    bool empty = false;
    for (int d = 0; d < e->ndim; d++) {
        uint64_t size = e->shape[d] > 0 ? (uint64_t)e->shape[d] : 1;
        if (extent > (uint64_t)INT64_MAX / size) return false;
        extent *= size;
        empty = empty || e->shape[d] == 0;
    }
    *out = empty ? 0 : extent;
    return true;
}

static ct_status parse_entry(const parse_context *ctx, const cJSON *item, uint64_t data_size, ct_io_entry *e)
{
    char name[CT_IO_PRINTABLE_MAX];
    ct_io_printable(item->string, name, sizeof name);
    if (!cJSON_IsObject(item))
        return FAIL(ctx, "tensor '%s' is not an object {\"dtype\": ..., \"shape\": ..., \"data_offsets\": ...}", name);
    static const char *const fields[3] = {"dtype", "shape", "data_offsets"};
    const cJSON *found[3] = {NULL, NULL, NULL};
    for (const cJSON *field = item->child; field; field = field->next)
        for (int k = 0; k < 3; k++)
            if (strcmp(field->string, fields[k]) == 0) {
                if (found[k]) return FAIL(ctx, "tensor '%s' has '%s' twice", name, fields[k]);
                found[k] = field;
            }
    for (int k = 0; k < 3; k++)
        if (!found[k]) return FAIL(ctx, "tensor '%s' has no '%s'", name, fields[k]);
    e->name = item->string;
    ct_status status = parse_dtype(ctx, name, found[0], &e->dtype);
    if (status == CT_OK) status = parse_shape(ctx, name, found[1], e);
    if (status == CT_OK) status = parse_offsets(ctx, name, found[2], e);
    if (status != CT_OK) return status;
    uint64_t bytes;
    char shape[256];
    ct_shape_format(e->shape, e->ndim, shape, sizeof shape);
    if (!shape_bytes(e, &bytes))
        return FAIL(ctx, "tensor '%s': shape %s of %s has more bytes than memory can address", name,
                    shape, ct_io_dtype_code(e->dtype));
    if (bytes != e->end - e->begin)
        return FAIL(ctx, "tensor '%s': shape %s of %s is %llu bytes but data_offsets [%llu, %llu] hold "
                    "%llu", name, shape, ct_io_dtype_code(e->dtype), (unsigned long long)bytes,
                    (unsigned long long)e->begin, (unsigned long long)e->end,
                    (unsigned long long)(e->end - e->begin));
    if (e->end > data_size)
        return FAIL(ctx, "tensor '%s': data_offsets [%llu, %llu] lie outside the data section (%llu "
                    "bytes)", name, (unsigned long long)e->begin, (unsigned long long)e->end,
                    (unsigned long long)data_size);
    return CT_OK;
}

/* ---- across entries ---- */

static int compare_names(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* Every key of object once (cJSON keeps repeated keys as separate items). */
static ct_status check_unique_keys(const parse_context *ctx, const cJSON *object, const char *what)
{
    int count = cJSON_GetArraySize(object);
    const cJSON **items = malloc(((size_t)count + 1) * sizeof *items);
    if (!items) return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_load: '%s': no host memory", ctx->file);
    int k = 0;
    for (const cJSON *item = object->child; item; item = item->next) items[k++] = item;
    qsort(items, (size_t)count, sizeof *items, compare_names);
    ct_status status = CT_OK;
    for (k = 1; k < count && status == CT_OK; k++)
        if (strcmp(items[k - 1]->string, items[k]->string) == 0) {
            char name[CT_IO_PRINTABLE_MAX];
            if (strcmp(items[k]->string, CT_IO_METADATA_KEY) == 0 && object == ctx->top)
                status = FAIL(ctx, "the header has '" CT_IO_METADATA_KEY "' twice");
            else
                status = FAIL(ctx, "the header has %s '%s' twice", what,
                              ct_io_printable(items[k]->string, name, sizeof name));
        }
    free(items);
    return status;
}

static int compare_ranges(const void *a, const void *b)
{
    const ct_io_entry *x = *(const ct_io_entry *const *)a, *y = *(const ct_io_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* The ranges, in order, must cover the data section exactly: no overlap, no gap, nothing after. */
static ct_status check_ranges(const parse_context *ctx, ct_io_entry *entries, int64_t count, uint64_t data_size)
{
    ct_io_entry **sorted = malloc(((size_t)count + 1) * sizeof *sorted);
    if (!sorted) return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_load: '%s': no host memory", ctx->file);
    for (int64_t i = 0; i < count; i++) sorted[i] = &entries[i];
    qsort(sorted, (size_t)count, sizeof *sorted, compare_ranges);
    ct_status status = CT_OK;
    uint64_t covered = 0;
    const ct_io_entry *last = NULL; /* the entry that ends at `covered` */
    char name[CT_IO_PRINTABLE_MAX], other[CT_IO_PRINTABLE_MAX];
    for (int64_t k = 0; k < count && status == CT_OK; k++) {
        const ct_io_entry *e = sorted[k];
        if (e->begin < covered)
            status = FAIL(ctx, "tensor '%s': data_offsets [%llu, %llu] overlap those of tensor '%s' "
                          "[%llu, %llu]", ct_io_printable(e->name, name, sizeof name),
                          (unsigned long long)e->begin, (unsigned long long)e->end,
                          ct_io_printable(last->name, other, sizeof other),
                          (unsigned long long)last->begin, (unsigned long long)last->end);
        else if (e->begin > covered)
            status = FAIL(ctx, "tensor '%s': data_offsets [%llu, %llu] leave bytes [%llu, %llu) of the "
                          "data section to no tensor; safetensors data has no gaps",
                          ct_io_printable(e->name, name, sizeof name), (unsigned long long)e->begin,
                          (unsigned long long)e->end, (unsigned long long)covered,
                          (unsigned long long)e->begin);
        if (e->end > covered || !last) covered = e->end, last = e;
    }
    if (status == CT_OK && covered != data_size)
        status = FAIL(ctx, "the data section has %llu bytes but its tensors cover %llu; the file has "
                      "bytes that belong to no tensor", (unsigned long long)data_size,
                      (unsigned long long)covered);
    free(sorted);
    return status;
}

static int compare_entry_names(const void *a, const void *b)
{
    return strcmp((*(const ct_io_entry *const *)a)->name, (*(const ct_io_entry *const *)b)->name);
}

/* The metadata: an object of strings; "ctorch.device.<name>" says where <name> was saved. */
static ct_status parse_metadata(const parse_context *ctx, const cJSON *metadata, ct_io_entry *entries, int64_t count)
{
    char key[CT_IO_PRINTABLE_MAX];
    if (!cJSON_IsObject(metadata))
        return FAIL(ctx, "'" CT_IO_METADATA_KEY "' is not an object of strings");
    for (const cJSON *item = metadata->child; item; item = item->next)
        if (!cJSON_IsString(item))
            return FAIL(ctx, CT_IO_METADATA_KEY " '%s' is not a string; safetensors metadata holds "
                        "strings only", ct_io_printable(item->string, key, sizeof key));
    ct_status status = check_unique_keys(ctx, metadata, CT_IO_METADATA_KEY " key");
    if (status != CT_OK) return status;
    ct_io_entry **by_name = malloc(((size_t)count + 1) * sizeof *by_name);
    if (!by_name) return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_load: '%s': no host memory", ctx->file);
    for (int64_t i = 0; i < count; i++) by_name[i] = &entries[i];
    qsort(by_name, (size_t)count, sizeof *by_name, compare_entry_names);
    size_t prefix_length = strlen(CT_IO_DEVICE_KEY_PREFIX);
    for (const cJSON *item = metadata->child; item && status == CT_OK; item = item->next) {
        if (strncmp(item->string, CT_IO_DEVICE_KEY_PREFIX, prefix_length) != 0) continue;
        ct_io_entry probe = {.name = item->string + prefix_length}, *probe_pointer = &probe;
        ct_io_entry **found = bsearch(&probe_pointer, by_name, (size_t)count, sizeof *by_name, compare_entry_names);
        if (!found) continue; /* a device for no tensor: nothing to place */
        ct_device device;
        if (ct_device_parse_syntax(item->valuestring, &device) != CT_OK) {
            char name[CT_IO_PRINTABLE_MAX], value[CT_IO_PRINTABLE_MAX];
            status = FAIL(ctx, "tensor '%s': the metadata says it was saved on '%s', which is not a "
                          "device", ct_io_printable((*found)->name, name, sizeof name),
                          ct_io_printable(item->valuestring, value, sizeof value));
        } else {
            (*found)->has_saved_device = true;
            (*found)->saved_device = device;
        }
    }
    free(by_name);
    return status;
}

ct_status ct_io_header_parse(const char *path, const char *text, size_t length, uint64_t data_size,
                             ct_io_header *out)
{
    memset(out, 0, sizeof *out);
    parse_context ctx = {path, {0}, NULL};
    ct_io_printable(path, ctx.file, sizeof ctx.file);
    cJSON *json = NULL;
    ct_status status = parse_json(&ctx, text, length, &json);
    if (status != CT_OK) return status;
    ctx.top = json;
    status = check_unique_keys(&ctx, json, "tensor");
    int64_t capacity = cJSON_GetArraySize(json);
    ct_io_entry *entries = calloc((size_t)capacity + 1, sizeof *entries);
    if (status == CT_OK && !entries) status = ct_error(CT_ERR_OUT_OF_MEMORY, "ct_load: '%s': no host memory", ctx.file);
    int64_t count = 0;
    const cJSON *metadata = NULL;
    for (const cJSON *item = json->child; item && status == CT_OK; item = item->next) {
        if (strcmp(item->string, CT_IO_METADATA_KEY) == 0) metadata = item;
        else status = parse_entry(&ctx, item, data_size, &entries[count++]);
    }
    if (status == CT_OK) status = check_ranges(&ctx, entries, count, data_size);
    if (status == CT_OK && metadata) status = parse_metadata(&ctx, metadata, entries, count);
    if (status != CT_OK) {
        free(entries);
        cJSON_Delete(json);
        return status;
    }
    *out = (ct_io_header){json, entries, count, metadata};
    return CT_OK;
}

void ct_io_header_free(ct_io_header *header)
{
    free(header->entries);
    cJSON_Delete(header->json);
    memset(header, 0, sizeof *header);
}

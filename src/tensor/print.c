/* Printing tensors in PyTorch's layout (torch/_tensor_str.py with its default options: precision
 * 4, line width 80, summaries of 3 edge items per dim beyond 1000 elements), except that ctorch
 * always names the device:
 *     tensor([[1., 2.],
 *             [3., 4.]], device='cpu')
 * Only the printed elements are read back from the device. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_internal.h"

#define PRINT_PRECISION 4
#define PRINT_LINE_WIDTH 80
#define PRINT_THRESHOLD 1000 /* more elements than this are summarised */
#define PRINT_EDGE_ITEMS 3   /* elements shown at each end of a summarised dim */

/* ---- a growing string ---- */

typedef struct text {
    char *data;
    size_t length, capacity;
    bool failed;
} text;

static void text_append(text *s, const char *chars, size_t n)
{
    if (s->failed) return;
    if (s->length + n + 1 > s->capacity) {
        size_t capacity = s->capacity ? s->capacity : 256;
        while (s->length + n + 1 > capacity) capacity *= 2;
        char *data = realloc(s->data, capacity);
        if (!data) {
            s->failed = true;
            return;
        }
        s->data = data;
        s->capacity = capacity;
    }
    memcpy(s->data + s->length, chars, n);
    s->length += n;
    s->data[s->length] = '\0';
}

static void text_add(text *s, const char *chars) { text_append(s, chars, strlen(chars)); }

static void text_repeat(text *s, char c, int count)
{
    for (int k = 0; k < count; k++) text_append(s, &c, 1);
}

/* ---- the printed elements, on the host ---- */

/* The elements that will be printed: all of them, or for a summarised tensor only the edge
 * items of each long dim (PyTorch's get_summarized_data), row-major in `values`. */
typedef struct printed {
    ct_dtype dtype;
    int ndim;
    int64_t kept[CT_MAX_DIMS];      /* elements of each dim held in values */
    bool summarised[CT_MAX_DIMS];   /* dim shows its first and last PRINT_EDGE_ITEMS only */
    int64_t strides[CT_MAX_DIMS];   /* of values */
    int64_t count;
    unsigned char *values;
} printed;

/* Copies the block of t starting at `start` with sizes `sizes` into p->values at `at`. */
static ct_status fetch_block(const ct_tensor *t, printed *p, const int64_t *start,
                             const int64_t *sizes, const int64_t *at)
{
    int64_t offset = t->offset;
    for (int d = 0; d < t->ndim; d++) offset += start[d] * t->strides[d];
    ct_tensor *block = ct_tensor_view_of(t, t->ndim, sizes, t->strides, offset);
    if (!block) return ct_last_error();
    size_t element = ct_dtype_size(t->dtype);
    int64_t n = ct_shape_numel(sizes, t->ndim);
    unsigned char *host = malloc((size_t)n * element);
    ct_status status = host ? ct_tensor_to_array(block, host, (size_t)n * element)
                            : ct_error(CT_ERR_OUT_OF_MEMORY, "ct_tensor_to_string: no host memory");
    ct_release(block);
    int64_t index[CT_MAX_DIMS] = {0};
    for (int64_t k = 0; status == CT_OK && k < n; k++) {
        int64_t target = 0;
        for (int d = 0; d < t->ndim; d++) target += (at[d] + index[d]) * p->strides[d];
        memcpy(p->values + (size_t)target * element, host + (size_t)k * element, element);
        for (int d = t->ndim - 1; d >= 0 && ++index[d] == sizes[d]; d--) index[d] = 0;
    }
    free(host);
    return status;
}

static ct_status fetch(const ct_tensor *t, printed *p)
{
    bool summarise = ct_numel(t) > PRINT_THRESHOLD;
    p->dtype = t->dtype;
    p->ndim = t->ndim;
    int long_dims[CT_MAX_DIMS], long_count = 0;
    for (int d = 0; d < t->ndim; d++) {
        p->summarised[d] = summarise && t->shape[d] > 2 * PRINT_EDGE_ITEMS;
        p->kept[d] = p->summarised[d] ? 2 * PRINT_EDGE_ITEMS : t->shape[d];
        if (p->summarised[d]) long_dims[long_count++] = d;
    }
    ct_contiguous_strides(p->kept, p->ndim, p->strides);
    p->count = ct_shape_numel(p->kept, p->ndim);
    size_t bytes = (size_t)p->count * ct_dtype_size(t->dtype);
    p->values = malloc(bytes ? bytes : 1);
    if (!p->values) return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_tensor_to_string: no host memory for "
                                    "%zu bytes", bytes);
    if (long_count == 0) return ct_tensor_to_array(t, p->values, bytes);
    /* One block per choice of head or tail in every summarised dim. */
    for (int choice = 0; choice < (1 << long_count); choice++) {
        int64_t start[CT_MAX_DIMS] = {0}, sizes[CT_MAX_DIMS], at[CT_MAX_DIMS] = {0};
        for (int d = 0; d < t->ndim; d++) sizes[d] = t->shape[d];
        for (int k = 0; k < long_count; k++) {
            int d = long_dims[k];
            bool tail = (choice >> k) & 1;
            sizes[d] = PRINT_EDGE_ITEMS;
            start[d] = tail ? t->shape[d] - PRINT_EDGE_ITEMS : 0;
            at[d] = tail ? PRINT_EDGE_ITEMS : 0;
        }
        ct_status status = fetch_block(t, p, start, sizes, at);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

static double float_at(const printed *p, int64_t k)
{
    if (p->dtype == CT_F32) return ((const float *)p->values)[k];
    if (p->dtype == CT_F16) return ct_f16_to_float(((const uint16_t *)p->values)[k]);
    if (p->dtype == CT_BF16) return ct_bf16_to_float(((const uint16_t *)p->values)[k]);
    return ((const double *)p->values)[k];
}

static long long integer_at(const printed *p, int64_t k)
{
    switch (p->dtype) {
    case CT_I32: return ((const int32_t *)p->values)[k];
    case CT_I64: return (long long)((const int64_t *)p->values)[k];
    default: return p->values[k];
    }
}

/* ---- formatting elements (PyTorch's _Formatter) ---- */

typedef struct formatter {
    bool floating, int_mode, sci_mode;
    int width;
} formatter;

/* One element into buf, without padding; returns its length. */
static int format_element(const formatter *f, const printed *p, int64_t k, char *buf, size_t size)
{
    if (p->dtype == CT_BOOL) return snprintf(buf, size, "%s", p->values[k] ? "True" : "False");
    if (!f->floating) return snprintf(buf, size, "%lld", integer_at(p, k));
    double v = float_at(p, k);
    if (isnan(v)) return snprintf(buf, size, "nan");
    if (f->sci_mode) return snprintf(buf, size, "%.*e", PRINT_PRECISION, v);
    if (f->int_mode) return snprintf(buf, size, isinf(v) ? "%.0f" : "%.0f.", v);
    return snprintf(buf, size, "%.*f", PRINT_PRECISION, v);
}

static int max_int(int a, int b) { return a > b ? a : b; }

static formatter make_formatter(const printed *p)
{
    formatter f = {.floating = ct_dtype_is_floating(p->dtype), .int_mode = true, .width = 1};
    char buf[512];
    if (!f.floating) {
        for (int64_t k = 0; k < p->count; k++) f.width = max_int(f.width, format_element(&f, p, k, buf, sizeof buf));
        return f;
    }
    /* Only nonzero finite values decide the mode and the width. */
    double min = INFINITY, max = 0;
    bool any = false;
    for (int64_t k = 0; k < p->count; k++) {
        double v = float_at(p, k);
        if (!isfinite(v) || v == 0) continue;
        any = true;
        min = fmin(min, fabs(v));
        max = fmax(max, fabs(v));
        if (v != ceil(v)) f.int_mode = false;
    }
    if (!any) return f;
    f.sci_mode = max / min > 1000.0 || max > 1.0e8 || (!f.int_mode && min < 1.0e-4);
    for (int64_t k = 0; k < p->count; k++) {
        double v = float_at(p, k);
        if (isfinite(v) && v != 0) f.width = max_int(f.width, format_element(&f, p, k, buf, sizeof buf));
    }
    return f;
}

static void add_element(text *s, const formatter *f, const printed *p, int64_t k)
{
    char buf[512];
    int length = format_element(f, p, k, buf, sizeof buf);
    text_repeat(s, ' ', f->width - length);
    text_add(s, buf);
}

/* ---- the nested layout (PyTorch's _tensor_str_with_formatter) ---- */

/* Position j of dim d among what is printed: an element index, or -1 for the "..." marker. */
static int64_t printed_index(const printed *p, int d, int64_t j)
{
    if (!p->summarised[d] || j < PRINT_EDGE_ITEMS) return j;
    return j == PRINT_EDGE_ITEMS ? -1 : j - 1;
}

static void add_vector(text *s, const formatter *f, const printed *p, int64_t base, int d, int indent)
{
    int per_line = max_int(1, (PRINT_LINE_WIDTH - indent) / (f->width + 2));
    int64_t items = p->kept[d] + (p->summarised[d] ? 1 : 0);
    text_add(s, "[");
    for (int64_t j = 0; j < items; j++) {
        if (j > 0 && j % per_line == 0) {
            text_add(s, ",\n");
            text_repeat(s, ' ', indent + 1);
        } else if (j > 0) {
            text_add(s, ", ");
        }
        int64_t k = printed_index(p, d, j);
        if (k < 0)
            text_add(s, " ...");
        else
            add_element(s, f, p, base + k * p->strides[d]);
    }
    text_add(s, "]");
}

static void add_tensor(text *s, const formatter *f, const printed *p, int64_t base, int d, int indent)
{
    int remaining = p->ndim - d;
    if (remaining == 0) {
        add_element(s, f, p, base);
        return;
    }
    if (remaining == 1) {
        add_vector(s, f, p, base, d, indent);
        return;
    }
    int64_t items = p->kept[d] + (p->summarised[d] ? 1 : 0);
    text_add(s, "[");
    for (int64_t j = 0; j < items; j++) {
        if (j > 0) {
            text_add(s, ",");
            text_repeat(s, '\n', remaining - 1);
            text_repeat(s, ' ', indent + 1);
        }
        int64_t k = printed_index(p, d, j);
        if (k < 0)
            text_add(s, "...");
        else
            add_tensor(s, f, p, base + k * p->strides[d], d + 1, indent + 1);
    }
    text_add(s, "]");
}

/* ", suffix", or on a new line when the current one would pass the line width (_add_suffixes). */
static void add_suffix(text *s, const char *suffix, int indent, size_t *last_line)
{
    size_t length = strlen(suffix);
    if (*last_line + length + 2 > PRINT_LINE_WIDTH) {
        text_add(s, ",\n");
        text_repeat(s, ' ', indent);
        *last_line = (size_t)indent + length;
    } else {
        text_add(s, ", ");
        *last_line += length + 2;
    }
    text_add(s, suffix);
}

static char *tensor_to_string(const ct_tensor *t)
{
    static const char prefix[] = "tensor(";
    const int indent = (int)strlen(prefix);
    text s = {0};
    text_add(&s, prefix);
    bool empty = ct_numel(t) == 0;
    if (empty) {
        text_add(&s, "[]");
    } else {
        printed p = {0};
        ct_status status = fetch(t, &p);
        if (status == CT_OK) {
            formatter f = make_formatter(&p);
            add_tensor(&s, &f, &p, 0, 0, indent);
        }
        free(p.values);
        if (status != CT_OK) {
            free(s.data);
            return NULL;
        }
    }
    /* The length PyTorch counts for the last line (it adds 2 when there is no newline). */
    const char *newline = s.data ? strrchr(s.data, '\n') : NULL;
    size_t last_line = newline ? s.length - (size_t)(newline - s.data) + 1 : s.length + 2;
    char suffix[320], device[CT_DEVICE_STRING_MAX];
    snprintf(suffix, sizeof suffix, "device='%s'", ct_device_format(t->storage->device, device, sizeof device));
    add_suffix(&s, suffix, indent, &last_line);
    if (empty && t->ndim != 1) {
        size_t used = (size_t)snprintf(suffix, sizeof suffix, "size=(");
        for (int d = 0; d < t->ndim; d++)
            used += (size_t)snprintf(suffix + used, sizeof suffix - used, d ? ", %lld" : "%lld",
                                     (long long)t->shape[d]);
        snprintf(suffix + used, sizeof suffix - used, ")");
        add_suffix(&s, suffix, indent, &last_line);
    }
    /* Values show int64 and bool by themselves; an empty tensor shows every dtype but float32. */
    bool default_dtype = t->dtype == CT_F32 || (!empty && (t->dtype == CT_I64 || t->dtype == CT_BOOL));
    if (!default_dtype) {
        snprintf(suffix, sizeof suffix, "dtype=%s", ct_dtype_name(t->dtype));
        add_suffix(&s, suffix, indent, &last_line);
    }
    text_add(&s, ")");
    if (s.failed) {
        free(s.data);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_tensor_to_string: no host memory for the text");
    }
    return s.data;
}

char *ct_tensor_to_string(const ct_tensor *t)
{
    if (ct_tensor_unusable("ct_tensor_to_string", "t", t)) return NULL;
    return tensor_to_string(t);
}

/* Like Python's print(t, file=stream): the text and a newline. */
static ct_status print_to(const char *function, FILE *stream, const ct_tensor *t)
{
    if (!stream) return ct_null_argument(function, "stream"), ct_last_error();
    if (ct_tensor_unusable(function, "t", t)) {
        /* seen, not silent: a failed chain prints as C prints a NULL string, with the error kept */
        fprintf(stream, "%s\n", t ? "(a tensor used after release)" : "(null)");
        return ct_last_error();
    }
    char *string = tensor_to_string(t);
    if (!string) return ct_last_error();
    int written = fprintf(stream, "%s\n", string);
    free(string);
    if (written < 0) return ct_error(CT_ERR_IO, "%s: writing to the stream failed", function);
    return CT_OK;
}

ct_status ct_fprint(FILE *stream, const ct_tensor *t) { return print_to("ct_fprint", stream, t); }

ct_status ct_print(const ct_tensor *t) { return print_to("ct_print", stdout, t); }

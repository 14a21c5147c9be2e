/* The CPU's results of the conformance table, digested (see conf_digest): two builds that compute
 * the same bits write the same text. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* FNV-1a, 64 bits, continued from h over size bytes. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t size)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++) h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

/* Writes "<value>" of element i: %a for floats (every bit), decimal for integers. */
static void print_element(FILE *out, const void *buffer, ct_dtype dtype, int64_t i)
{
    if (ct_dtype_is_floating(dtype)) fprintf(out, " %a", conf_load_float(buffer, dtype, i));
    else fprintf(out, " %lld", (long long)conf_load_int(buffer, dtype, i));
}

/* One line for one case of one dtype on the CPU: the result's dtype, shape and a digest of its
 * bits (every NaN counts as one: payloads are not a result), or the error it gave; with values,
 * a second line with every element (empty after an error). */
static void digest_case(FILE *out, const conf_op *op, ct_dtype dtype, const conf_case *c, bool values)
{
    conf_args args;
    ct_tensor *sources[CONF_MAX_INPUTS] = {0};
    bool ready = conf_case_inputs(op, c, dtype, &args, sources);
    fprintf(out, "%s %s '%s':", op->name, ct_dtype_name(dtype), c->name);
    ct_scope_push();
    ct_tensor *ref = ready ? conf_run_on(op, c, &args, sources, CT_DEVICE_CPU) : NULL;
    int64_t n = ref ? ct_numel(ref) : 0;
    ct_dtype rtype = ref ? ct_tensor_dtype(ref) : dtype;
    size_t size = ct_dtype_size(rtype), bytes = (size_t)(n > 0 ? n : 1) * size;
    unsigned char *data = ref ? malloc(bytes) : NULL;
    if (!data || ct_tensor_to_array(ref, data, bytes) != CT_OK) {
        fprintf(out, " error: %s\n%s", ct_last_error_message(), values ? "   \n" : "");
        ct_clear_error();
        free(data);
        ct_scope_pop();
        return;
    }
    for (int64_t i = 0; i < n && ct_dtype_is_floating(rtype); i++) {
        if (!isnan(conf_load_float(data, rtype, i))) continue;
        if (rtype == CT_F32) ((float *)data)[i] = NAN;
        else if (rtype == CT_F16) ((uint16_t *)data)[i] = 0x7e00; /* every NaN is one NaN */
        else if (rtype == CT_BF16) ((uint16_t *)data)[i] = 0x7fc0;
        else ((double *)data)[i] = NAN;
    }
    char shape[128];
    int ndim = ct_tensor_ndim(ref);
    uint64_t h = fnv1a(0xcbf29ce484222325u, &rtype, sizeof rtype);
    h = fnv1a(h, ct_tensor_shape(ref), sizeof(int64_t) * (size_t)ndim);
    h = fnv1a(h, data, (size_t)n * size);
    fprintf(out, " %s %s %016llx\n", ct_dtype_name(rtype),
            conf_format_shape(ct_tensor_shape(ref), ndim, shape, sizeof shape), (unsigned long long)h);
    if (values) {
        fprintf(out, "   ");
        for (int64_t i = 0; i < n; i++) print_element(out, data, rtype, i);
        fprintf(out, "\n");
    }
    free(data);
    ct_scope_pop();
}

long conf_digest(FILE *out, const char *const *names, int name_count, bool values)
{
    long lines = 0;
    for (int i = 0; i < conf_op_total(); i++) {
        const conf_op *op = conf_op_at(i);
        bool chosen = name_count == 0;
        for (int k = 0; k < name_count && !chosen; k++) chosen = strcmp(names[k], op->name) == 0;
        if (!chosen) continue;
        for (int d = 0; d < CT_DTYPE_COUNT; d++)
            if (op->dtypes & CONF_DT(d))
                for (const conf_case *c = op->cases; c->name; c++, lines++)
                    digest_case(out, op, (ct_dtype)d, c, values);
    }
    conf_release_inputs();
    return lines;
}

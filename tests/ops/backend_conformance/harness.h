/* What the conformance runner's files share: harness.c generates the inputs, runs each case on
 * the CPU and on every device and compares; float64_reference.c checks a 16-bit result against
 * float64; digest.c digests the CPU's results. */
#ifndef CT_TEST_CONFORMANCE_HARNESS_H
#define CT_TEST_CONFORMANCE_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conformance.h"

/* Where a mismatch was found, for its report. */
typedef struct conf_where {
    bool quiet;
    const conf_op *op;
    ct_dtype dtype;
    const char *case_name;
    char device[CT_DEVICE_STRING_MAX];
} conf_where;

/* Prints "MISMATCH <op> <dtype> case '<case>' on <device>: " and the message (not when quiet). */
void conf_report(const conf_where *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *conf_format_shape(const int64_t *shape, int ndim, char *buf, size_t size);
/* Element i of a host buffer of dtype. */
double conf_load_float(const void *buffer, ct_dtype dtype, int64_t i);
int64_t conf_load_int(const void *buffer, ct_dtype dtype, int64_t i);
bool conf_compare(const conf_where *w, const ct_tensor *ref, const ct_tensor *got,
                  const ct_tensor *magnitude, double ulps, ct_dtype ulp_dtype);

/* The arguments of case c of op in dtype, and its inputs before their views (CPU tensors that the
 * cache owns); false when one could not be made (the error is recorded). */
bool conf_case_inputs(const conf_op *op, const conf_case *c, ct_dtype dtype, conf_args *args,
                      ct_tensor **inputs);
/* t with the input's views taken (new references in the current scope). */
ct_tensor *conf_take_views(ct_tensor *t, const conf_input *in);
ct_tensor *conf_run_on(const conf_op *op, const conf_case *c, conf_args *args, ct_tensor **sources,
                       ct_device device);

bool conf_matches_float64(const conf_op *op, const conf_case *c, conf_args *args, ct_tensor *const *bases,
                          const ct_tensor *ref, const ct_tensor *magnitude, conf_where *w);

#endif

/* The dtype table: sizes, names, categories and promotion. */
#include "core/core_internal.h"

static const struct {
    const char *name;
    size_t size;
} dtype_table[CT_DTYPE_COUNT] = {
    [CT_F32] = {"float32", 4}, [CT_F64] = {"float64", 8}, [CT_I32] = {"int32", 4},
    [CT_I64] = {"int64", 8},   [CT_U8] = {"uint8", 1},    [CT_BOOL] = {"bool", 1},
    [CT_F16] = {"float16", 2}, [CT_BF16] = {"bfloat16", 2},
};

bool ct_dtype_is_valid(int dtype) { return dtype >= 0 && dtype < CT_DTYPE_COUNT; }

size_t ct_dtype_size(ct_dtype dtype) { return ct_dtype_is_valid(dtype) ? dtype_table[dtype].size : 0; }

const char *ct_dtype_name(ct_dtype dtype)
{
    return ct_dtype_is_valid(dtype) ? dtype_table[dtype].name : "invalid";
}

bool ct_dtype_is_floating(ct_dtype dtype)
{
    return dtype == CT_F32 || dtype == CT_F64 || dtype == CT_F16 || dtype == CT_BF16;
}

bool ct_dtype_is_integral(ct_dtype dtype) { return dtype == CT_I32 || dtype == CT_I64 || dtype == CT_U8; }

/* Rank in PyTorch's lattice restricted to ctorch's dtypes: the larger rank wins. */
static int promotion_rank(ct_dtype dtype)
{
    switch (dtype) {
    case CT_BOOL: return 0;
    case CT_U8: return 1;
    case CT_I32: return 2;
    case CT_I64: return 3;
    case CT_F16:
    case CT_BF16: return 4;
    case CT_F32: return 5;
    case CT_F64: return 6;
    default: return -1;
    }
}

ct_dtype ct_promote_types(ct_dtype a, ct_dtype b)
{
    /* neither 16-bit format holds the other: PyTorch meets them in float32 */
    if ((a == CT_F16 && b == CT_BF16) || (a == CT_BF16 && b == CT_F16)) return CT_F32;
    return promotion_rank(a) >= promotion_rank(b) ? a : b;
}

/* The tiles of the CPU's fused attention (cpu_attention.c) for one real type: included with
 * REAL (float or double), NAME(x) (x with the type's suffix), GEMM (an sgemm or cblas_dgemm),
 * EXP and LOG defined. */

/* Row maximum and fixed-order sums over LANES lanes; row[j] for visible <= j < round_up(nk,
 * LANES) must be 0 for the sum. NaN never wins the maximum (the comparison fails). */
static REAL NAME(row_max)(const REAL *row, long visible, REAL start)
{
    REAL lanes[LANES];
    for (int u = 0; u < LANES; u++) lanes[u] = start;
    long j = 0;
    for (; j + LANES <= visible; j += LANES)
#pragma omp simd
        for (int u = 0; u < LANES; u++) lanes[u] = row[j + u] > lanes[u] ? row[j + u] : lanes[u];
    for (; j < visible; j++) lanes[0] = row[j] > lanes[0] ? row[j] : lanes[0];
    REAL m = lanes[0];
    for (int u = 1; u < LANES; u++) m = lanes[u] > m ? lanes[u] : m;
    return m;
}

static REAL NAME(row_sum)(const REAL *row, long padded)
{
    REAL lanes[LANES] = {0};
    for (long j = 0; j < padded; j += LANES)
#pragma omp simd
        for (int u = 0; u < LANES; u++) lanes[u] += row[j + u];
    REAL s = 0;
    for (int u = 0; u < LANES; u++) s += lanes[u];
    return s;
}

/* One query block of one (batch * head): out and lse rows [q0, q0 + nq). s is QBLOCK x KBLOCK
 * scratch, acc QBLOCK x dv, top and total QBLOCK. Operands are where their layouts say
 * (ct_attention_args). */
static void NAME(forward_block)(const ct_attention_args *a, long bh, long q0, REAL *s, REAL *acc,
                                REAL *top, REAL *total)
{
    long tq = a->tq, tk = a->tk, d = a->d, dv = a->dv;
    const REAL *q = (const REAL *)a->q + a->q_offset + matrix_at(a, a->q_at, bh);
    const REAL *k = (const REAL *)a->k + a->k_offset + matrix_at(a, a->k_at, bh);
    const REAL *v = (const REAL *)a->v + a->v_offset + matrix_at(a, a->v_at, bh);
    REAL *out = (REAL *)a->out + a->out_offset + matrix_at(a, a->out_at, bh);
    REAL *lse = (REAL *)a->lse + a->lse_offset + bh * tq;
    long ldq = a->q_at.row, ldk = a->k_at.row, ldv = a->v_at.row, ldo = a->out_at.row;
    long nq = min_long(QBLOCK, tq - q0);
    long kend = a->causal ? min_long(tk, q0 + nq) : tk;
    for (long r = 0; r < nq; r++) {
        top[r] = (-(REAL)INFINITY);
        total[r] = 0;
    }
    memset(acc, 0, sizeof(REAL) * (size_t)(nq * dv));
    for (long k0 = 0; k0 < kend; k0 += KBLOCK) {
        long nk = min_long(KBLOCK, kend - k0), padded = round_up(nk, LANES);
        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)nk, (int)d,
             (REAL)a->scale, q + q0 * ldq, (int)ldq, k + k0 * ldk, (int)ldk, (REAL)0, s, KBLOCK);
        for (long r = 0; r < nq; r++) {
            REAL *row = s + r * KBLOCK;
            long visible = visible_keys(a, q0 + r, k0, nk);
            REAL m = NAME(row_max)(row, visible, top[r]);
            if (m == (-(REAL)INFINITY)) { /* nothing seen yet: the row's accumulator stays 0 */
                memset(row, 0, sizeof(REAL) * (size_t)padded);
                continue;
            }
#pragma omp simd
            for (long j = 0; j < visible; j++) row[j] = EXP(row[j] - m);
            for (long j = visible; j < padded; j++) row[j] = 0;
            REAL shrink = EXP(top[r] - m);
            total[r] = total[r] * shrink + NAME(row_sum)(row, padded);
            top[r] = m;
            if (shrink != (REAL)1) {
                REAL *o = acc + r * dv;
#pragma omp simd
                for (long c = 0; c < dv; c++) o[c] *= shrink;
            }
        }
        GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nq, (int)dv, (int)nk, (REAL)1, s,
             KBLOCK, v + k0 * ldv, (int)ldv, (REAL)1, acc, (int)dv);
    }
    for (long r = 0; r < nq; r++) {
        long i = q0 + r;
        /* a row that sees no key gives 0, as PyTorch's safe softmax */
        REAL inverse = top[r] == (-(REAL)INFINITY) ? (REAL)0 : (REAL)1 / total[r];
        const REAL *o = acc + r * dv;
#pragma omp simd
        for (long c = 0; c < dv; c++) out[i * ldo + c] = o[c] * inverse;
        lse[i] = top[r] + LOG(total[r]);
    }
}

/* The whole backward of one (batch * head), on one thread. s and ds are QBLOCK x KBLOCK scratch. */
static void NAME(backward_head)(const ct_attention_args *a, long bh, REAL *s, REAL *ds)
{
    long tq = a->tq, tk = a->tk, d = a->d, dv = a->dv;
    const REAL *q = (const REAL *)a->q + a->q_offset + matrix_at(a, a->q_at, bh);
    const REAL *k = (const REAL *)a->k + a->k_offset + matrix_at(a, a->k_at, bh);
    const REAL *v = (const REAL *)a->v + a->v_offset + matrix_at(a, a->v_at, bh);
    const REAL *go = (const REAL *)a->dout + a->dout_offset + matrix_at(a, a->dout_at, bh);
    const REAL *lse = (const REAL *)a->lse + a->lse_offset + bh * tq;
    const REAL *delta = (const REAL *)a->delta + a->delta_offset + bh * tq;
    REAL *dq = (REAL *)a->dq + a->dq_offset + matrix_at(a, a->dq_at, bh);
    REAL *dk = (REAL *)a->dk + a->dk_offset + matrix_at(a, a->dk_at, bh);
    REAL *dvg = (REAL *)a->dv_grad + a->dv_grad_offset + matrix_at(a, a->dv_at, bh);
    long ldq = a->q_at.row, ldk = a->k_at.row, ldv = a->v_at.row, ldgo = a->dout_at.row;
    long lddq = a->dq_at.row, lddk = a->dk_at.row, lddv = a->dv_at.row;
    for (long i = 0; i < tq; i++) memset(dq + i * lddq, 0, sizeof(REAL) * (size_t)d);
    for (long j = 0; j < tk; j++) {
        memset(dk + j * lddk, 0, sizeof(REAL) * (size_t)d);
        memset(dvg + j * lddv, 0, sizeof(REAL) * (size_t)dv);
    }
    REAL scale = (REAL)a->scale;
    for (long q0 = 0; q0 < tq; q0 += QBLOCK) {
        long nq = min_long(QBLOCK, tq - q0);
        long kend = a->causal ? min_long(tk, q0 + nq) : tk;
        for (long k0 = 0; k0 < kend; k0 += KBLOCK) {
            long nk = min_long(KBLOCK, kend - k0);
            GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)nk, (int)d, scale,
                 q + q0 * ldq, (int)ldq, k + k0 * ldk, (int)ldk, (REAL)0, s, KBLOCK);
            GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)nk, (int)dv, (REAL)1,
                 go + q0 * ldgo, (int)ldgo, v + k0 * ldv, (int)ldv, (REAL)0, ds, KBLOCK);
            for (long r = 0; r < nq; r++) {
                REAL *p = s + r * KBLOCK, *dp = ds + r * KBLOCK;
                long visible = visible_keys(a, q0 + r, k0, nk);
                REAL l = lse[q0 + r], e = delta[q0 + r];
#pragma omp simd
                for (long j = 0; j < visible; j++) {
                    REAL pj = EXP(p[j] - l);
                    p[j] = pj;
                    dp[j] = pj * (dp[j] - e);
                }
                for (long j = visible; j < nk; j++) {
                    p[j] = 0;
                    dp[j] = 0;
                }
            }
            /* dv += p^T dout; dq += scale ds k; dk += scale ds^T q */
            GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)nk, (int)dv, (int)nq, (REAL)1, s,
                 KBLOCK, go + q0 * ldgo, (int)ldgo, (REAL)1, dvg + k0 * lddv, (int)lddv);
            GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nq, (int)d, (int)nk, scale,
                 ds, KBLOCK, k + k0 * ldk, (int)ldk, (REAL)1, dq + q0 * lddq, (int)lddq);
            GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)nk, (int)d, (int)nq, scale, ds,
                 KBLOCK, q + q0 * ldq, (int)ldq, (REAL)1, dk + k0 * lddk, (int)lddk);
        }
    }
}


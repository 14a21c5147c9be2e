/* Before every collective the ranks compare what they brought (which collective, op, root,
 * dtype, shape, and whether they could take part at all), so that a mismatch is an error on every
 * rank instead of a hang or a reduction of garbage.
 *
 * The common case costs one MPI_Allreduce of 2 x 14 + 2 int64: each field and its negation, reduced
 * by MPI_MAX, give the largest and the smallest value of every field at once; they agree when
 * the two are equal. Only when something differs do the ranks all-gather their descriptors (and
 * the error messages of ranks that failed), to name exactly what differs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed/dist_internal.h"

enum { F_KIND, F_OP, F_ROOT, F_DTYPE, F_NDIM, F_STATUS, F_SHAPE, FIELDS = F_SHAPE + CT_MAX_DIMS };

#define MESSAGE_MAX 512

/* One rank's account on the error path. */
typedef struct account {
    int64_t fields[FIELDS];
    char message[MESSAGE_MAX];
} account;

const char *ct_dist_kind_function(ct_dist_kind kind)
{
    switch (kind) {
    case CT_DIST_BARRIER: return "ct_dist_barrier";
    case CT_DIST_ALL_REDUCE: return "ct_dist_all_reduce";
    case CT_DIST_BROADCAST: return "ct_dist_broadcast";
    case CT_DIST_ALL_GATHER: return "ct_dist_all_gather";
    case CT_DIST_REDUCE_SCATTER: return "ct_dist_reduce_scatter";
    case CT_DIST_FINALIZE: return "ct_dist_finalize";
    case CT_DIST_AGREE_SETTINGS: return "ct_dist_agree_on_settings";
    }
    return "a collective";
}

ct_dist_descriptor ct_dist_describe(ct_dist_kind kind, int op, int root, const ct_tensor *t)
{
    ct_dist_descriptor d = {.kind = kind, .op = op, .root = root, .dtype = -1, .ndim = -1, .status = CT_OK};
    if (t) {
        d.dtype = (int)t->dtype;
        d.ndim = t->ndim;
        for (int i = 0; i < t->ndim; i++) d.shape[i] = t->shape[i];
    }
    return d;
}

static void pack(const ct_dist_descriptor *d, int64_t *fields)
{
    fields[F_KIND] = d->kind;
    fields[F_OP] = d->op;
    fields[F_ROOT] = d->root;
    fields[F_DTYPE] = d->dtype;
    fields[F_NDIM] = d->ndim;
    fields[F_STATUS] = d->status;
    for (int i = 0; i < CT_MAX_DIMS; i++) fields[F_SHAPE + i] = i < d->ndim ? d->shape[i] : -1;
}

/* "float32 tensor of shape [3, 4]", or "no tensor". */
static const char *describe_tensor(const int64_t *f, char *buf, size_t size)
{
    if (f[F_NDIM] < 0) {
        snprintf(buf, size, "no tensor");
        return buf;
    }
    int64_t shape[CT_MAX_DIMS];
    for (int i = 0; i < f[F_NDIM]; i++) shape[i] = f[F_SHAPE + i];
    char dims[256];
    snprintf(buf, size, "a %s tensor of shape %s", ct_dtype_name((ct_dtype)f[F_DTYPE]),
             ct_shape_format(shape, (int)f[F_NDIM], dims, sizeof dims));
    return buf;
}

/* The error for a rank `other` whose call differs from this rank's. */
static ct_status report_difference(const ct_dist_group *group, const int64_t *mine, int other,
                                   const int64_t *theirs)
{
    const char *fn = ct_dist_kind_function((ct_dist_kind)mine[F_KIND]);
    if (mine[F_KIND] != theirs[F_KIND] && (mine[F_KIND] == CT_DIST_FINALIZE || theirs[F_KIND] == CT_DIST_FINALIZE))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: rank %d called %s at the same point: %s collectives "
                        "than %s; every rank must call the same collectives (were the ranks started with "
                        "different settings?)", fn, other, ct_dist_kind_function((ct_dist_kind)theirs[F_KIND]),
                        theirs[F_KIND] == CT_DIST_FINALIZE ? "it has ended, having called fewer"
                                                           : "this rank has ended, having called fewer",
                        theirs[F_KIND] == CT_DIST_FINALIZE ? "this rank" : "it");
    if (mine[F_KIND] != theirs[F_KIND])
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: rank %d called %s at the same point; every rank must "
                        "call the same collectives in the same order", fn, other,
                        ct_dist_kind_function((ct_dist_kind)theirs[F_KIND]));
    if (mine[F_KIND] == CT_DIST_AGREE_SETTINGS)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: this rank (%d) gave %lld settings, rank %d gave %lld; "
                        "every rank must give the same settings", fn, group->rank, (long long)mine[F_SHAPE],
                        other, (long long)theirs[F_SHAPE]);
    if (mine[F_OP] != theirs[F_OP])
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: this rank (%d) reduces with %s, rank %d with %s; every "
                        "rank must pass the same op", fn, group->rank,
                        ct_reduce_op_name((ct_reduce_op)mine[F_OP]), other,
                        ct_reduce_op_name((ct_reduce_op)theirs[F_OP]));
    if (mine[F_ROOT] != theirs[F_ROOT])
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: this rank (%d) broadcasts from root %lld, rank %d "
                        "from root %lld; every rank must pass the same root", fn, group->rank,
                        (long long)mine[F_ROOT], other, (long long)theirs[F_ROOT]);
    char a[320], b[320];
    bool same_shape = mine[F_NDIM] == theirs[F_NDIM] &&
                      memcmp(mine + F_SHAPE, theirs + F_SHAPE, sizeof(int64_t) * CT_MAX_DIMS) == 0;
    ct_status status = mine[F_DTYPE] != theirs[F_DTYPE] && same_shape ? CT_ERR_DTYPE : CT_ERR_SHAPE;
    return ct_error(status, "%s: this rank (%d) passed %s, rank %d passed %s; every rank must pass the "
                    "same shape and dtype", fn, group->rank, describe_tensor(mine, a, sizeof a), other,
                    describe_tensor(theirs, b, sizeof b));
}

/* Everyone learns what everyone brought, and this rank records the error that concerns it. */
static ct_status explain(ct_dist_group *group, const int64_t *mine, ct_status my_status)
{
    static const char *FN = "ct_dist_agree";
    account *accounts = calloc((size_t)group->world_size + 1, sizeof *accounts);
    if (!accounts)
        /* Every rank reaches this point together; one without memory leaves the others waiting
         * in the all-gather, so it stops the job rather than hang it. */
        MPI_Abort(group->comm, 1);
    account *own = &accounts[group->world_size];
    memcpy(own->fields, mine, sizeof own->fields);
    if (my_status != CT_OK) snprintf(own->message, sizeof own->message, "%s", ct_last_error_message());
    MPI_Request request;
    int code = MPI_Iallgather(own, (int)sizeof *own, MPI_BYTE, accounts, (int)sizeof *own, MPI_BYTE, group->comm,
                              &request);
    ct_status status;
    if (code != MPI_SUCCESS) {
        status = ct_dist_mpi_fail(FN, "MPI_Iallgather", code);
    } else if ((status = ct_dist_wait(group, &request, "MPI_Iallgather")) != CT_OK) {
        /* Timed out: MPI may still write into accounts, which stays allocated. */
        return status;
    } else if (my_status != CT_OK) {
        status = my_status; /* this rank's own error, already recorded */
    } else {
        status = CT_OK;
        for (int r = 0; r < group->world_size && status == CT_OK; r++)
            if (accounts[r].fields[F_STATUS] != CT_OK)
                status = ct_error((ct_status)accounts[r].fields[F_STATUS], "%s: rank %d could not take part: %s",
                                  ct_dist_kind_function((ct_dist_kind)mine[F_KIND]), r, accounts[r].message);
        for (int r = 0; r < group->world_size && status == CT_OK; r++)
            if (memcmp(accounts[r].fields, mine, sizeof accounts[r].fields) != 0)
                status = report_difference(group, mine, r, accounts[r].fields);
    }
    free(accounts);
    return status;
}

ct_status ct_dist_agree_direct(ct_dist_group *group, const ct_dist_descriptor *d, bool *all_direct,
                               bool *any_direct)
{
    /* The fields and their negations, then whether this rank goes direct and its negation: the
     * maximum of the one says whether any rank does, of the other whether all do. */
    /* Static, not on the stack: after a timeout MPI may still write into it (one collective at a
     * time: the group's lock). */
    static int64_t extremes[2 * FIELDS + 2];
    int64_t mine[FIELDS];
    pack(d, mine);
    for (int i = 0; i < FIELDS; i++) {
        extremes[i] = mine[i];
        extremes[FIELDS + i] = -mine[i];
    }
    extremes[2 * FIELDS] = d->direct;
    extremes[2 * FIELDS + 1] = -(int64_t)d->direct;
    *all_direct = *any_direct = false;
    MPI_Request request;
    int code = MPI_Iallreduce(MPI_IN_PLACE, extremes, 2 * FIELDS + 2, MPI_INT64_T, MPI_MAX, group->comm, &request);
    if (code != MPI_SUCCESS) return ct_dist_mpi_fail("ct_dist_agree", "MPI_Iallreduce", code);
    ct_status status = ct_dist_wait(group, &request, "MPI_Iallreduce");
    if (status != CT_OK) return status;
    *any_direct = extremes[2 * FIELDS] == 1;
    *all_direct = extremes[2 * FIELDS + 1] == -1;
    bool agree = true;
    for (int i = 0; i < FIELDS; i++) agree = agree && extremes[i] == -extremes[FIELDS + i];
    if (agree && extremes[F_STATUS] == CT_OK) return CT_OK;
    return explain(group, mine, d->status);
}

ct_status ct_dist_agree(ct_dist_group *group, const ct_dist_descriptor *d)
{
    bool all_direct, any_direct;
    return ct_dist_agree_direct(group, d, &all_direct, &any_direct);
}

void ct_dist_abstain(const char *function, ct_dist_kind kind, int op)
{
    ct_status reason = ct_last_error() != CT_OK ? ct_last_error() : CT_ERR_INTERNAL;
    if (!ct_dist_is_initialized()) return; /* nobody waits; keep the reason */
    char message[1024];
    snprintf(message, sizeof message, "%s", ct_last_error_message());
    ct_dist_group *group = ct_dist_collective_begin(function);
    if (!group) {
        /* Nobody can wait (the group is broken): the reason stays this rank's error. */
        ct_error(reason, "%s", message);
        return;
    }
    ct_dist_descriptor d = ct_dist_describe(kind, op, -1, NULL);
    d.status = reason;
    ct_dist_agree(group, &d); /* returns reason on this rank, leaving its message */
    ct_dist_collective_end(group);
}

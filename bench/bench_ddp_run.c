/* The DistributedDataParallel benchmark's measurements, between the ranks of an MPI job
 * (`mpirun -np 2 ctorch bench ddp`: bench_ddp.c runs them at the sizes given in brackets here and
 * prints rank 0's figures). Two questions:
 *
 * 1. What does a training step cost with DDP against one process with the same global batch?
 *    Every rank trains an MLP of Linear(width, width) layers (8 of 1024: 33.6 MB of float32
 *    gradients) with `batch` rows (64) and SGD through the DDP wrapper; rank 0 also trains the
 *    plain model alone with world x batch rows while the other ranks sleep (in an MPI_Ibarrier
 *    polled with MPI_Test and nanosleep: OpenMPI's MPI_Barrier polls without sleeping and would
 *    take a core). A full step
 *    is zero_grad, forward, MSE loss, backward (with DDP: the bucketed all-reduces) and the SGD
 *    step. Reported as samples per second of each and their ratio; the DDP step under no_sync (the
 *    same work on every rank without any communication) is measured too, to tell the cost of
 *    sharing the cores from that of communicating, and so is the DDP step whose all-reduces start
 *    after backward (CT_DDP_START_AFTER_BACKWARD, what CT_DDP_START_AUTO picks on the CPU) beside
 *    the one whose buckets start during backward (CT_DDP_START_DURING_BACKWARD). On the development machine the
 *    2 ranks share its 2 cores, a thread each (OpenMP and OpenBLAS set to cores / ranks on this
 *    machine), while the process alone runs 2 threads on the same 2 cores: the ratio is DDP's
 *    cost (communication that is not hidden, and the rank's share of the cores it takes, copies
 *    into buckets), not a speed-up; with a device per rank it would be the speed-up. Target:
 *    report.
 *
 * 2. How much of the communication does backward hide? Backward through DDP (its all-reduces run
 *    on the process group's communication thread while backward goes on), backward through the
 *    wrapper under no_sync (no communication), and the all-reduce alone of the same bytes:
 *    tensors of the buckets' sizes (found from the gradients, which are views of their bucket
 *    after a synchronised backward), averaged with ct_dist_all_reduce_async in bucket order, all
 *    started then waited for, as DDP starts them. hidden = (t_no_sync + t_all_reduce - t_ddp) /
 *    t_all_reduce: 1 when the all-reduces cost the backward nothing, 0 when backward and
 *    communication simply add up. [Buckets of 8 MiB (bucket_cap_mb = 8) make 5 of them: the
 *    default 25 MiB would make 2, a first of about 1 MiB (PyTorch's first-bucket rule) and the
 *    rest.] DDP's own statistics (ct_ddp_stats.last_wait_seconds, the time the end of backward
 *    waited for the all-reduces, and last_communication_seconds, their time on the communication
 *    thread) are reported too. On 2 shared cores a rank's communication thread competes with its
 *    own backward for the core (MPI's copies and reduction are CPU work, and a rank polls while it
 *    waits for the other), so little or nothing is hidden here, and the overlap may even cost more
 *    than backward and communication one after the other; with GPUs and a network, overlap is
 *    what DDP's buckets are for.
 *
 * Medians over repeats, in pairs (or triples) whose order alternates; every rank makes the same
 * collective calls in the same order. Every timed DDP call starts after an MPI_Barrier, so one
 * rank's lateness is not counted in the next call.
 *
 * Cores: OpenMPI binds each of 2 ranks to one core by default, which would leave rank 0 a single
 * core for its steps alone; when the launcher bound this process to fewer CPUs than the machine
 * has, the benchmark lets every thread of the process use them all for its duration (and says
 * so; `mpirun --bind-to none` avoids it). OpenBLAS's worker threads spin for about 0.1 s after
 * their last GEMM before they sleep: rank 0 pauses settle_seconds after its steps alone, so that
 * its idle workers do not take the other rank's core in the DDP step that follows. */
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bench_ddp.h"
#include "ctorch.h"

#ifdef CTORCH_HAVE_MPI
#include <cblas.h>
#include <mpi.h>
#include <omp.h>


static void sleep_seconds(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* A failure between collectives: the other ranks would wait for this one forever. */
static void die(const char *what)
{
    fprintf(stderr, "bench ddp: rank %d: %s: %s\n", ct_dist_rank(), what, ct_last_error_message());
    ct_dist_abort(1);
}

/* Did every rank succeed? (A collective: every rank asks.) */
static bool all_ranks(bool ok)
{
    int mine = ok, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all != 0;
}

/* A barrier that sleeps while it waits, so that a waiting rank leaves its core to the others. */
static void sleeping_barrier(void)
{
    MPI_Request request;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    while (!done) {
        sleep_seconds(200e-6);
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    }
}

/* ---- threads and cores ---- */

static void use_threads(int count)
{
    omp_set_num_threads(count);
    openblas_set_num_threads(count);
}

static int cpus_allowed(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    return CPU_COUNT(&set);
}

/* Every thread of this process (those of OpenBLAS, OpenMP, MPI and ctorch too) gets `set`. */
static void set_process_affinity(const cpu_set_t *set)
{
    DIR *dir = opendir("/proc/self/task");
    if (!dir) {
        sched_setaffinity(0, sizeof *set, set);
        return;
    }
    for (struct dirent *entry; (entry = readdir(dir));)
        if (entry->d_name[0] != '.') sched_setaffinity((pid_t)atoi(entry->d_name), sizeof *set, set);
    closedir(dir);
}

/* ---- the replicas ---- */

typedef struct replica {
    ct_module *model; /* Sequential(Linear, ReLU, ..., Linear) */
    ct_module *net;   /* what the steps run: the DDP wrapper, or model itself */
    ct_optimizer *optimizer;
    ct_tensor *x, *y;
} replica;

static bool replica_make_model(replica *r, const ct_ddp_bench_spec *spec, int64_t rows)
{
    memset(r, 0, sizeof *r);
    ct_manual_seed(21);
    ct_module *layers[2 * CT_DDP_BENCH_MAX_LAYERS];
    int count = 0;
    for (int i = 0; i < spec->layers; i++) {
        if (i > 0) layers[count++] = ct_relu_module();
        layers[count++] = ct_linear(spec->width, spec->width, true);
    }
    r->model = ct_sequential(layers, count);
    int64_t shape[2] = {rows, spec->width};
    r->x = ct_randn(shape, 2, CT_F32, CT_DEVICE_CPU);
    r->y = ct_randn(shape, 2, CT_F32, CT_DEVICE_CPU);
    return r->model && r->x && r->y;
}

static bool replica_finish(replica *r, double lr)
{
    ct_sgd_options options = ct_sgd_options_default(lr);
    r->optimizer = r->net ? ct_optim_sgd(r->net, &options) : NULL;
    return r->optimizer != NULL;
}

static void replica_free(replica *r)
{
    ct_optimizer_free(r->optimizer);
    ct_module_release(r->net);
    ct_module_release(r->model);
    ct_release(r->x);
    ct_release(r->y);
    memset(r, 0, sizeof *r);
}

/* zero_grad, forward, MSE loss, backward, SGD step; through a DDP wrapper under no_sync when asked
 * (then each rank steps with its own gradients: the replicas drift apart, which costs the same). */
static void step(replica *r, bool no_sync)
{
    ct_scope_push();
    if (no_sync && ct_ddp_no_sync_push(r->net) != CT_OK) die("no_sync");
    ct_optimizer_zero_grad(r->optimizer);
    ct_tensor *loss = ct_mse_loss(ct_module_forward(r->net, r->x), r->y);
    ct_status status = loss ? ct_backward(loss) : ct_last_error();
    if (status == CT_OK) status = ct_optimizer_step(r->optimizer);
    if (no_sync) ct_ddp_no_sync_pop(r->net);
    ct_scope_pop();
    if (status != CT_OK) die("a training step");
}

/* ---- the measurements ---- */

/* One DDP step on every rank, started together. */
static double timed_ddp_step(replica *ddp, bool no_sync)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double start = ct_bench_now_seconds();
    step(ddp, no_sync);
    return ct_bench_now_seconds() - start;
}

/* Rank 0's step alone, with every core, while the others sleep; 0 on the other ranks. */
static double timed_step_alone(replica *alone, const ct_ddp_bench_spec *spec, const ct_ddp_bench_figures *f)
{
    double seconds = 0;
    if (alone->model) {
        use_threads(f->threads_alone);
        double start = ct_bench_now_seconds();
        step(alone, false);
        seconds = ct_bench_now_seconds() - start;
        use_threads(f->threads_per_rank);
        sleep_seconds(spec->settle_seconds);
    }
    sleeping_barrier();
    return seconds;
}

/* A forward through the wrapper (not timed), then its backward, timed; under no_sync when asked. */
static double timed_backward(replica *ddp, bool no_sync)
{
    ct_scope_push();
    ct_optimizer_zero_grad(ddp->optimizer);
    if (no_sync && ct_ddp_no_sync_push(ddp->net) != CT_OK) die("no_sync");
    ct_tensor *loss = ct_mse_loss(ct_module_forward(ddp->net, ddp->x), ddp->y);
    if (!loss) die("a forward");
    MPI_Barrier(MPI_COMM_WORLD);
    double start = ct_bench_now_seconds();
    ct_status status = ct_backward(loss);
    double seconds = ct_bench_now_seconds() - start;
    if (status != CT_OK) die("a backward");
    if (no_sync) ct_ddp_no_sync_pop(ddp->net);
    ct_scope_pop();
    return seconds;
}

/* The all-reduces of the buckets alone: started in order, then waited for. */
static double timed_all_reduce(ct_tensor *const *tensors, int count)
{
    ct_dist_work *works[2 * CT_DDP_BENCH_MAX_LAYERS];
    MPI_Barrier(MPI_COMM_WORLD);
    double start = ct_bench_now_seconds();
    for (int i = 0; i < count; i++)
        if (!(works[i] = ct_dist_all_reduce_async(tensors[i], CT_REDUCE_AVG))) die("starting an all-reduce");
    for (int i = 0; i < count; i++)
        if (ct_dist_work_wait(works[i]) != CT_OK) die("an all-reduce");
    return ct_bench_now_seconds() - start;
}

/* Tensors of the sizes of ddp's buckets, in bucket order (reverse registration), into out: after
 * a synchronised backward each parameter's gradient is a view of its bucket. One flat tensor of
 * stats.gradient_bytes when that does not add up to the statistics (a reducer that changed). */
static int bucket_sized_tensors(replica *ddp, const ct_ddp_stats *stats, ct_tensor **out, bool *per_bucket)
{
    ct_named_tensors *params = ct_module_named_parameters(ddp->model);
    if (!params) die("listing the parameters");
    int64_t numels[2 * CT_DDP_BENCH_MAX_LAYERS];
    int count = 0;
    int64_t total = 0;
    ct_tensor *previous = NULL; /* gradients that share a storage are views of one bucket */
    for (int64_t i = params->count - 1; i >= 0; i--) {
        ct_tensor *grad = ct_grad(params->tensors[i]);
        if (!grad) die("a parameter without a gradient");
        if (count == 0 || !ct_tensor_shares_storage(grad, previous)) numels[count++] = 0;
        numels[count - 1] += ct_numel(grad);
        total += ct_numel(grad);
        ct_release(previous);
        previous = grad;
    }
    ct_release(previous);
    ct_named_tensors_free(params);
    *per_bucket = count == stats->bucket_count && total * (int64_t)sizeof(float) == stats->gradient_bytes;
    if (!*per_bucket) {
        count = 1;
        numels[0] = stats->gradient_bytes / (int64_t)sizeof(float);
    }
    for (int i = 0; i < count; i++)
        if (!(out[i] = ct_ones(&numels[i], 1, CT_F32, CT_DEVICE_CPU))) die("a tensor to all-reduce");
    return count;
}

/* Part 1: full steps, DDP on every rank (communication during backward, then after it), the
 * same under no_sync, and rank 0 alone. at_end wraps the same model with CT_DDP_START_AFTER_BACKWARD:
 * each wrapper's hooks act only after its own forward. */
static void measure_steps(replica *ddp, replica *at_end, replica *alone, const ct_ddp_bench_spec *spec,
                          ct_ddp_bench_figures *f)
{
    enum { KINDS = 4 };
    size_t n = (size_t)spec->repeats;
    double *times = malloc(sizeof *times * KINDS * n);
    if (!times) die("no host memory");
    for (int i = 0; i < spec->warmup; i++) {
        timed_ddp_step(ddp, false);
        timed_ddp_step(at_end, false);
        timed_ddp_step(ddp, true);
        timed_step_alone(alone, spec, f);
    }
    for (int i = 0; i < spec->repeats; i++) {
        for (int k = 0; k < KINDS; k++) {
            int which = i % 2 == 0 ? k : KINDS - 1 - k;
            times[(size_t)which * n + (size_t)i] = which == 0   ? timed_ddp_step(ddp, false)
                                                   : which == 1 ? timed_ddp_step(ddp, true)
                                                   : which == 2 ? timed_step_alone(alone, spec, f)
                                                                : timed_ddp_step(at_end, false);
        }
    }
    f->step_ddp = ct_bench_median(times, spec->repeats);
    f->step_no_sync = ct_bench_median(times + n, spec->repeats);
    f->step_alone = ct_bench_median(times + 2 * n, spec->repeats);
    f->step_ddp_at_end = ct_bench_median(times + 3 * n, spec->repeats);
    free(times);
}

/* Part 2: backward with and without DDP's communication, and the communication alone. */
static void measure_overlap(replica *ddp, const ct_ddp_bench_spec *spec, ct_ddp_bench_figures *f)
{
    ct_ddp_stats stats;
    timed_backward(ddp, false); /* the gradients become views of the buckets */
    if (ct_ddp_get_stats(ddp->net, &stats) != CT_OK) die("ct_ddp_get_stats");
    f->bucket_count = stats.bucket_count;
    f->gradient_bytes = stats.gradient_bytes;
    ct_tensor *tensors[2 * CT_DDP_BENCH_MAX_LAYERS];
    int count = bucket_sized_tensors(ddp, &stats, tensors, &f->all_reduce_per_bucket);
    size_t n = (size_t)spec->repeats;
    double *times = malloc(sizeof *times * 5 * n);
    if (!times) die("no host memory");
    double *t_ddp = times, *t_no_sync = times + n, *t_comm = times + 2 * n, *wait = times + 3 * n,
           *comm = times + 4 * n;
    for (int i = 0; i < spec->warmup; i++) {
        timed_backward(ddp, false);
        timed_backward(ddp, true);
        timed_all_reduce(tensors, count);
    }
    for (int i = 0; i < spec->repeats; i++) {
        bool forward = i % 2 == 0;
        for (int k = 0; k < 3; k++) {
            int which = forward ? k : 2 - k;
            if (which == 0) {
                t_ddp[i] = timed_backward(ddp, false);
                if (ct_ddp_get_stats(ddp->net, &stats) != CT_OK) die("ct_ddp_get_stats");
                wait[i] = stats.last_wait_seconds;
                comm[i] = stats.last_communication_seconds;
            } else if (which == 1) {
                t_no_sync[i] = timed_backward(ddp, true);
            } else {
                t_comm[i] = timed_all_reduce(tensors, count);
            }
        }
    }
    int r = spec->repeats;
    f->backward_ddp = ct_bench_median(t_ddp, r);
    f->backward_no_sync = ct_bench_median(t_no_sync, r);
    f->all_reduce = ct_bench_median(t_comm, r);
    f->last_wait = ct_bench_median(wait, r);
    f->last_communication = ct_bench_median(comm, r);
    f->hidden_fraction = (f->backward_no_sync + f->all_reduce - f->backward_ddp) / f->all_reduce;
    free(times);
    for (int i = 0; i < count; i++) ct_release(tensors[i]);
}

bool ct_ddp_bench_run(const ct_ddp_bench_spec *spec, ct_ddp_bench_figures *out)
{
    memset(out, 0, sizeof *out);
    if (!ct_dist_is_initialized()) {
        snprintf(out->error, sizeof out->error, "the process group is not initialised (ct_dist_init)");
        return false;
    }
    if (spec->layers < 1 || spec->layers > CT_DDP_BENCH_MAX_LAYERS || spec->width < 1 || spec->batch < 1 ||
        spec->repeats < 1 || spec->warmup < 0) {
        snprintf(out->error, sizeof out->error, "a spec of 1 to %d layers, and positive sizes and repeats",
                 CT_DDP_BENCH_MAX_LAYERS);
        return false;
    }
    int rank = ct_dist_rank();
    out->world = ct_dist_world_size();
    int local_world = ct_dist_local_world_size();

    /* Cores: every CPU of the machine for this process, a share of them per rank for DDP. */
    cpu_set_t bound;
    bool have_binding = sched_getaffinity(0, sizeof bound, &bound) == 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (have_binding && CPU_COUNT(&bound) < online) {
        cpu_set_t all;
        CPU_ZERO(&all);
        for (int c = 0; c < CPU_SETSIZE; c++) CPU_SET(c, &all);
        set_process_affinity(&all);
        out->widened_affinity = true;
    }
    int omp_threads = omp_get_max_threads(), blas_threads = openblas_get_num_threads();
    out->threads_alone = cpus_allowed();
    out->threads_per_rank = out->threads_alone / (local_world > 0 ? local_world : 1);
    if (out->threads_per_rank < 1) out->threads_per_rank = 1;
    use_threads(out->threads_per_rank);

    replica ddp = {0}, at_end = {0}, alone = {0};
    bool ok = replica_make_model(&ddp, spec, spec->batch);
    if (ok && rank == 0) ok = replica_make_model(&alone, spec, (int64_t)out->world * spec->batch);
    if (ok && rank == 0) ok = (alone.net = ct_module_retain(alone.model)) && replica_finish(&alone, 1e-3);
    if (!ok) snprintf(out->error, sizeof out->error, "rank %d: making the model: %s", rank, ct_last_error_message());
    if (all_ranks(ok)) {
        ct_ddp_options options = ct_ddp_options_default();
        options.bucket_cap_mb = spec->bucket_cap_mb;
        options.all_reduce_start = CT_DDP_START_DURING_BACKWARD; /* PyTorch's way (not AUTO's on the CPU) */
        ddp.net = ct_distributed_data_parallel(ddp.model, &options); /* collective */
        ok = replica_finish(&ddp, 1e-3);
        /* The same model and batch, all-reduces after backward. */
        options.all_reduce_start = CT_DDP_START_AFTER_BACKWARD;
        at_end.model = ct_module_retain(ddp.model);
        at_end.x = ct_retain(ddp.x);
        at_end.y = ct_retain(ddp.y);
        at_end.net = ct_distributed_data_parallel(at_end.model, &options); /* collective */
        ok = replica_finish(&at_end, 1e-3) && ok;
        if (!ok)
            snprintf(out->error, sizeof out->error, "rank %d: wrapping the model: %s", rank, ct_last_error_message());
        if (all_ranks(ok)) {
            measure_steps(&ddp, &at_end, &alone, spec, out);
            measure_overlap(&ddp, spec, out);
        } else {
            ok = false;
        }
    } else {
        ok = false;
    }
    if (!ok && !out->error[0]) snprintf(out->error, sizeof out->error, "setup failed on another rank");
    replica_free(&at_end);
    replica_free(&ddp);
    replica_free(&alone);
    omp_set_num_threads(omp_threads);
    openblas_set_num_threads(blas_threads);
    if (out->widened_affinity) set_process_affinity(&bound);
    return ok;
}

#else

bool ct_ddp_bench_run(const ct_ddp_bench_spec *spec, ct_ddp_bench_figures *out)
{
    (void)spec;
    memset(out, 0, sizeof *out);
    snprintf(out->error, sizeof out->error, "ctorch was built without MPI");
    return false;
}

#endif

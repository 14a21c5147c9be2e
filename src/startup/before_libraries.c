/* libctorch_startup: settles, before the OpenMP runtime and OpenBLAS start, what they read from the
 * environment once and never again, in every program that loads ctorch, unless the user chose
 * otherwise: that their threads spin only briefly before they sleep while they wait for work, and
 * which of OpenBLAS's kernels run on this CPU.
 *
 * Long-spinning threads take the cores from each other on a busy machine: on 2 shared cores,
 * ctorch's training ran about 4x slower with libgomp's default (spin about 300000 times, some
 * milliseconds, before sleeping) than with OMP_WAIT_POLICY=passive, and OpenBLAS's own threads
 * (pthreads build) spin with sched_yield for about 2^28 cycles after every GEMM while ctorch's
 * OpenMP threads want the cores. Sleeping at once costs too, where ops follow each other closely:
 * each op's parallel region then wakes its sleeping workers (about 25 us on those cores, a futex
 * and a context switch each way), and a transformer block's training step (80 launches and 25
 * products) spent about a tenth of its time in the scheduler. So libgomp spins CT_STARTUP_SPIN
 * times (about 50 us, twice a wake-up: a thread that sleeps after that has lost at most that
 * much) and then sleeps: the block's step went from 41 to 34 ms (medians of 5 interleaved runs
 * on 2 shared Zen 3 cores; docs/design.md), and a program that waits longer between ops still
 * finds ctorch's threads asleep. libomp (clang) knows no spin count: KMP_BLOCKTIME=0 makes its
 * threads sleep at once, as OMP_WAIT_POLICY=passive did.
 *
 * Both libraries read their environment once, in their own constructors, before main runs, and have
 * no call to change it afterwards. So the variables must be set by a constructor that runs before
 * theirs: this one, in a library of its own that needs nothing but libc. The dynamic loader runs
 * the constructors of objects that do not depend on each other in the reverse of the order they
 * were loaded in (glibc's sort, old and new), and libctorch lists this library after libgomp and
 * OpenBLAS, so it is loaded after them and its constructor runs before theirs. libctorch cannot do
 * this itself: it depends on libgomp, whose constructor therefore runs first. (-z initfirst would
 * run it even before libc's own, whose start then replaces the environment we set.)
 * tests/backend/test_openmp_threads_sleep.c checks the waiting in a program linked as users link,
 * tests/backend/test_openblas_kernels_chosen_by_extensions.c the kernels. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "startup/before_libraries.h"
#include "startup/cpu_features.h"

static int what_was_set;
static const char *openblas_coretype_set;

/* The address space left under the process's limits (ulimit -v: RLIMIT_AS; ulimit -d: RLIMIT_DATA,
 * which private anonymous mappings count against), or SIZE_MAX without a limit. */
static size_t address_space_left(void)
{
    size_t left = SIZE_MAX;
    unsigned long long size = 0, resident, shared, text, library, data = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    bool read = f && fscanf(f, "%llu %llu %llu %llu %llu %llu", &size, &resident, &shared, &text, &library,
                            &data) == 6;
    if (f) fclose(f);
    if (!read) size = data = 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const struct {
        int resource;
        unsigned long long used_pages;
    } limits[2] = {{RLIMIT_AS, size}, {RLIMIT_DATA, data}};
    for (int i = 0; i < 2; i++) {
        struct rlimit limit;
        if (getrlimit(limits[i].resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) continue;
        size_t used = (size_t)limits[i].used_pages * page;
        size_t room = limit.rlim_cur > used ? (size_t)(limit.rlim_cur - used) : 0;
        if (room < left) left = room;
    }
    return left;
}

/* Below this much address space left at start, the program keeps to few threads (below). */
#define TIGHT_ADDRESS_SPACE ((size_t)4 << 30)

static bool tight;

/* Under a limit on the address space (ulimit -v, ulimit -d) that leaves less than
 * TIGHT_ADDRESS_SPACE, the libraries' threads are what fails first, and they fail without a way
 * back: OpenBLAS's pthreads build starts a thread per core in its constructor, each mapping its
 * 128 MiB work buffer, and one whose mapping fails retries for ever, so the program hung at exit
 * joining it (even `ctorch --version`); PoCL's pthread device aborts when it cannot start its
 * threads. So there OpenBLAS starts no thread beside the caller's (whose buffer ctorch checks
 * before each product: cpu_blas_workspace.c), and PoCL one. The user's OPENBLAS_NUM_THREADS,
 * GOTO_NUM_THREADS and POCL_MAX_PTHREAD_COUNT stand. (libctorch also keeps the CPU's products off
 * oneDNN there: cpu_engine_choice.c.) */
static void keep_to_few_threads_under_a_tight_limit(void)
{
    tight = address_space_left() < TIGHT_ADDRESS_SPACE;
    if (!tight) return;
    if (!getenv("OPENBLAS_NUM_THREADS") && !getenv("GOTO_NUM_THREADS") &&
        setenv("OPENBLAS_NUM_THREADS", "1", 0) == 0)
        what_was_set |= CT_STARTUP_SET_OPENBLAS_NUM_THREADS;
    if (!getenv("POCL_MAX_PTHREAD_COUNT") && setenv("POCL_MAX_PTHREAD_COUNT", "1", 0) == 0)
        what_was_set |= CT_STARTUP_SET_POCL_MAX_PTHREAD_COUNT;
}

bool ct_startup_address_space_tight(void) { return tight; }

__attribute__((constructor)) static void settle_environment_before_libraries(void)
{
    keep_to_few_threads_under_a_tight_limit();
    /* The user's choice stands: either variable means they chose how libgomp waits. */
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT") &&
        setenv("GOMP_SPINCOUNT", CT_STARTUP_SPIN, 0) == 0)
        what_was_set |= CT_STARTUP_SET_GOMP_SPINCOUNT;
    if (!getenv("OMP_WAIT_POLICY") && !getenv("KMP_BLOCKTIME"))
        (void)setenv("KMP_BLOCKTIME", "0", 0);
    /* OpenBLAS's pthreads build: its threads sleep after 2^4 cycles without work (the least it
     * takes), instead of 2^28. The OpenMP build waits as libgomp does. */
    if (!getenv("OPENBLAS_THREAD_TIMEOUT") && setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0) == 0)
        what_was_set |= CT_STARTUP_SET_OPENBLAS_THREAD_TIMEOUT;
    /* The kernels by the CPU's extensions, not by its model, which OpenBLAS only knows when it is
     * older than OpenBLAS (cpu_features.c, ct_openblas_coretype_for). A user's OPENBLAS_CORETYPE
     * stands, even a slower one: they may be measuring it. */
    const char *coretype = ct_openblas_coretype_for(ct_cpu_features_get());
    if (coretype && !getenv("OPENBLAS_CORETYPE") && setenv("OPENBLAS_CORETYPE", coretype, 0) == 0) {
        what_was_set |= CT_STARTUP_SET_OPENBLAS_CORETYPE;
        openblas_coretype_set = coretype;
    }
}

int ct_startup_environment_set(void) { return what_was_set; }

const char *ct_startup_openblas_coretype(void) { return openblas_coretype_set; }

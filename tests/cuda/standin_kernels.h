/* The kernels of src/kernels/ compiled as C for the stand-in driver, one runner per kernel that
 * runs work items [first, end) one by one, as the threads of a CUDA grid would: each item is the
 * kernel's CT_IDX, and the kernel checks its own bound against n (so a grid that covers too few
 * items computes too little, and one that covers more runs the extra items, as on a GPU). The
 * sources are generated from standin_kernels.c.in, one per family, by standin.cmake, with
 * CT_DIALECT_STANDIN defined: a kernel's CT_GROUP_ID, CT_LOCAL_ID and CT_GROUP_SIZE are read from
 * the running thread's standin_ids (which the runner sets for each item it starts, and the block
 * scheduler for each fiber it resumes), and CT_BARRIER() is the scheduler's (standin_blocks.c). */
#ifndef CTORCH_STANDIN_KERNELS_H
#define CTORCH_STANDIN_KERNELS_H

#include "kernels/kernel_ids.h"
#include "kernels/kernel_params.h"

/* The item a thread runs: item i of a launch of blocks of group_size is thread
 * i % group_size of block i / group_size. */
typedef struct standin_item_ids {
    long group_id, local_id, group_size;
    /* Set by the scheduler when the item just started turned its block into fibers (its thread 0
     * reached a barrier): the runner returns after that item instead of starting the next. */
    int leave_runner;
    struct blocks *blocks; /* the thread's fibers (standin_blocks.c), once it has run a launch */
} standin_item_ids;

/* The running thread's (standin_blocks.c). Not exported. */
extern _Thread_local standin_item_ids standin_ids __attribute__((visibility("hidden")));
/* &standin_ids as a plain pointer, for the runners' loops: there the compiler would rather call
 * __tls_get_addr again for every item than keep the thread-local's address (a 1-D add's items
 * took 3.75 ns instead of 2.05). */
standin_item_ids *standin_thread_ids(void) __attribute__((visibility("hidden")));
/* CT_BARRIER(), given the thread's &standin_ids: waits until every thread of the block has
 * reached it. Not exported. */
void standin_barrier_wait(standin_item_ids *ids) __attribute__((visibility("hidden")));

typedef void (*ctorch_standin_runner)(long first, long end, void *const *buffers,
                                      const ct_kparams *params);
/* A kernel's name as its source spells it ("add_f32"), and its runner; indexed by kernel id. */
typedef struct ctorch_standin_kernel {
    const char *name;
    ctorch_standin_runner run;
} ctorch_standin_kernel;

#define CTORCH_STANDIN_DECLARE_REGISTER(family)                                                  \
    void ctorch_standin_register_##family(ctorch_standin_kernel *table);
CT_KERNEL_SOURCES(CTORCH_STANDIN_DECLARE_REGISTER)
#undef CTORCH_STANDIN_DECLARE_REGISTER

#endif

/* The stand-in CUDA driver's blocks (standin_internal.h): a launch runs its blocks one after
 * another on the stream's worker thread, and the threads of a block that meet at barriers as
 * fibers of that thread, so that a block's CT_LOCAL arrays (the worker's _Thread_local statics)
 * are shared by its threads and CT_BARRIER() waits for all of them, as on a GPU.
 *
 * Most kernels never reach a barrier, and a fiber per item would cost more than most items, so
 * items run as plain calls of the kernel's runner, which itself runs in one fiber (the runner
 * fiber): when the item of a block's thread 0 reaches a barrier, that block is cooperative, and
 * its other threads start as fibers of their own while the runner fiber waits as thread 0. The
 * block then runs in rounds: each thread in turn runs until its next barrier or its end and
 * passes on to the next thread; after the last, when every thread waits, the barrier opens and
 * the next round starts at thread 0, and when every thread has returned the block is done and
 * the rest of the launch goes on in a new runner fiber. So a launch of plain kernels costs one
 * fiber, a thread's barrier one switch, and blocks decide for themselves (a block whose threads
 * all return early, as the last blocks of an oversized grid do, reaches no barrier).
 *
 * A kernel whose threads disagree about barriers is wrong on a GPU (it hangs there, or worse):
 * a barrier reached by a thread whose thread 0 returned without reaching one, or a round where
 * some threads returned while others wait at a barrier. The launch stops there with a complaint
 * naming the kernel and the threads, and fails (the stream's context reports
 * CUDA_ERROR_LAUNCH_FAILED from then on, see standin_workers.c).
 *
 * Fibers switch with a few instructions of assembly on x86-64, and with ucontext elsewhere (or
 * when STANDIN_FIBERS_UCONTEXT is defined), whose swapcontext makes a system call per switch to
 * save the signal mask: a tree sum's barrier takes 17 times longer with it (305 ns a thread
 * against 17.6). Their stacks are mapped once per thread, with a guard page below each, and
 * reused; AddressSanitizer is told of every switch. */
#include "standin_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if !defined(__x86_64__) && !defined(STANDIN_FIBERS_UCONTEXT)
#define STANDIN_FIBERS_UCONTEXT 1
#endif
#ifdef STANDIN_FIBERS_UCONTEXT
#include <ucontext.h>
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STANDIN_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define STANDIN_ASAN 1
#endif

#ifdef STANDIN_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
/* AddressSanitizer's frames are larger (red zones), and it runs the tests in Debug. */
#define FIBER_STACK_BYTES ((size_t)256 << 10)
#else
#define FIBER_STACK_BYTES ((size_t)128 << 10)
#endif

_Thread_local standin_item_ids standin_ids = {0, 0, 1, 0, NULL};

standin_item_ids *standin_thread_ids(void)
{
    return &standin_ids;
}

typedef enum { FIBER_IDLE, FIBER_READY, FIBER_AT_BARRIER, FIBER_DONE } fiber_state;

typedef struct fiber {
#ifdef STANDIN_FIBERS_UCONTEXT
    ucontext_t context;
#else
    void *sp; /* its stack pointer while switched out */
#endif
    char *stack; /* the lowest address of its FIBER_STACK_BYTES */
    void *asan_fake_stack;
    long first, end; /* the items it runs: one, or the rest of the launch for the runner fiber */
    long group_id, local_id; /* of the item it runs (the runner fiber's: at its last barrier) */
    fiber_state state;
} fiber;

/* The round of the cooperative block that runs (see pass_on). */
typedef struct block_round {
    long size;
    long waiting, returned; /* threads of this round that wait at the barrier, and returned */
    long first_waiting, first_returned;
} block_round;

/* What a thread that runs launches has; mapped (not malloc'ed: no heap memory hangs off thread
 * state that LeakSanitizer does not scan), found through a pthread key, unmapped at its exit. */
typedef struct blocks {
    standin_item_ids *ids;    /* the thread's standin_ids, kept: each use of a thread-local of a
                                 dlopen'ed library is a call of __tls_get_addr */
    const standin_grid *grid; /* the launch running, NULL between launches */
    fiber *current;           /* the fiber running, NULL when the scheduler runs */
    bool in_block;            /* a cooperative block runs: its fibers pass on to each other */
    block_round round;
#ifdef STANDIN_FIBERS_UCONTEXT
    ucontext_t scheduler_context;
#else
    void *scheduler_sp;
#endif
    /* AddressSanitizer's view of the scheduler's stack (the thread's own). */
    void *scheduler_fake_stack;
    const void *scheduler_stack_bottom;
    size_t scheduler_stack_size;
    bool leaving_scheduler;
    char *stacks;       /* MAX_THREADS_PER_BLOCK guard pages and stacks, mapped inaccessible */
    long stacks_usable; /* how many of them are readable and writable, from the first */
    fiber fibers[MAX_THREADS_PER_BLOCK];
} blocks;

#define GUARD_BYTES ((size_t)4096)
#define STACK_STRIDE (GUARD_BYTES + FIBER_STACK_BYTES)

static pthread_key_t blocks_key;
static pthread_once_t blocks_key_once = PTHREAD_ONCE_INIT;
static bool blocks_key_made; /* read without the once: by the kernels' ids and barrier */

static void blocks_free(void *p)
{
    blocks *b = p;
    munmap(b->stacks, MAX_THREADS_PER_BLOCK * STACK_STRIDE);
    munmap(b, sizeof *b);
}

static void make_blocks_key(void)
{
    pthread_key_create(&blocks_key, blocks_free);
    __atomic_store_n(&blocks_key_made, true, __ATOMIC_RELEASE);
}

/* The calling thread's blocks while it runs a launch; a complaint and abort otherwise (a kernel's
 * ids or barrier asked for outside a kernel). */
static blocks *running_blocks(const char *who)
{
    blocks *b = __atomic_load_n(&blocks_key_made, __ATOMIC_ACQUIRE) ? pthread_getspecific(blocks_key) : NULL;
    if (!b || !b->grid) {
        standin_complain("%s called outside a kernel's thread", who);
        abort();
    }
    return b;
}

static blocks *this_thread_blocks(void)
{
    pthread_once(&blocks_key_once, make_blocks_key);
    blocks *b = pthread_getspecific(blocks_key);
    if (b) return b;
    b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *stacks = mmap(NULL, MAX_THREADS_PER_BLOCK * STACK_STRIDE, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (b == MAP_FAILED || stacks == MAP_FAILED) {
        standin_complain("cannot map the fibers of a block: out of address space");
        abort();
    }
    b->stacks = stacks;
    for (long t = 0; t < MAX_THREADS_PER_BLOCK; t++)
        b->fibers[t].stack = b->stacks + t * STACK_STRIDE + GUARD_BYTES;
    b->ids = &standin_ids;
    b->ids->blocks = b;
    pthread_setspecific(blocks_key, b);
    return b;
}

/* The stacks of fibers [0, count) readable and writable. */
static void make_stacks_usable(blocks *b, long count)
{
    for (; b->stacks_usable < count; b->stacks_usable++)
        if (mprotect(b->fibers[b->stacks_usable].stack, FIBER_STACK_BYTES, PROT_READ | PROT_WRITE)) {
            standin_complain("cannot map the stack of a block's thread %ld", b->stacks_usable);
            abort();
        }
}

/* ---- switching ---- */

#ifdef STANDIN_ASAN
#define START_SWITCH(save, bottom, size) __sanitizer_start_switch_fiber((save), (bottom), (size))
#define FINISH_SWITCH(save, bottom_old, size_old)                                                \
    __sanitizer_finish_switch_fiber((save), (bottom_old), (size_old))
#define FORGET_STACK(stack) ASAN_UNPOISON_MEMORY_REGION((stack), FIBER_STACK_BYTES)
#else
#define START_SWITCH(save, bottom, size) ((void)(save), (void)(bottom), (void)(size))
#define FINISH_SWITCH(save, bottom_old, size_old) ((void)(save), (void)(bottom_old), (void)(size_old))
#define FORGET_STACK(stack) ((void)(stack))
#endif

static void fiber_main(void);

#ifndef STANDIN_FIBERS_UCONTEXT
/* void standin_switch_stacks(void **save_sp, void *load_sp): saves the callee-saved registers of
 * the System V ABI on the running stack, stores its pointer in *save_sp, and returns on the stack
 * load_sp into the context saved there (a new fiber's stack is made to look like one, see
 * start_fiber). The floating-point control words (MXCSR, x87) stay the thread's, as for plain
 * calls: no kernel changes them, and saving and loading them made a tree sum's barrier (two
 * switches per thread) 12% slower. */
void standin_switch_stacks(void **save_sp, void *load_sp) __attribute__((visibility("hidden")));
__asm__(".text\n"
        ".globl standin_switch_stacks\n"
        ".hidden standin_switch_stacks\n"
        ".type standin_switch_stacks, @function\n"
        ".p2align 4\n"
        "standin_switch_stacks:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size standin_switch_stacks, .-standin_switch_stacks\n");
#endif

/* f starts over, to run items [first, end) of blocks of `size` from fiber_main. */
static void start_fiber(fiber *f, long first, long end, long size)
{
    f->first = first;
    f->end = end;
    f->group_id = first / size;
    f->local_id = first % size;
    f->state = FIBER_READY;
    f->asan_fake_stack = NULL;
#ifdef STANDIN_FIBERS_UCONTEXT
    getcontext(&f->context);
    f->context.uc_stack.ss_sp = f->stack;
    f->context.uc_stack.ss_size = FIBER_STACK_BYTES;
    f->context.uc_link = NULL;
    makecontext(&f->context, fiber_main, 0);
#else
    /* What standin_switch_stacks pops, from the lowest address: r15, r14, r13, r12, rbx, rbp,
     * the address it returns to (fiber_main), and the return address fiber_main finds above it,
     * which it never uses (0 ends frame-pointer walks too). The stack top is page aligned, so
     * fiber_main starts with the stack as a call leaves it. */
    uint64_t *top = (uint64_t *)(void *)(f->stack + FIBER_STACK_BYTES);
    top[-1] = 0;
    top[-2] = (uint64_t)(uintptr_t)fiber_main;
    for (int r = 3; r <= 8; r++) top[-r] = 0;
    f->sp = &top[-8];
#endif
}

/* What a fiber, or the scheduler, does first when it runs again: AddressSanitizer learns that its
 * stack is the one in use (and, from a switch that left the scheduler, where the scheduler's is). */
static void arrive(blocks *b, void *fake_stack)
{
    const void *from_bottom = NULL;
    size_t from_size = 0;
    FINISH_SWITCH(fake_stack, &from_bottom, &from_size);
    if (b->leaving_scheduler) {
        b->scheduler_stack_bottom = from_bottom;
        b->scheduler_stack_size = from_size;
        b->leaving_scheduler = false;
    }
}

/* From `from` to `to` (NULL: the scheduler), which runs with its ids; returns when `from` runs
 * again (never for a finished fiber). */
static void switch_to(blocks *b, fiber *from, fiber *to)
{
    b->current = to;
    if (to) {
        b->ids->group_id = to->group_id;
        b->ids->local_id = to->local_id;
    }
    b->leaving_scheduler = !from;
    /* A finished fiber's fake stack (AddressSanitizer's, for use after return) is released. */
    void **fake_stack = !from ? &b->scheduler_fake_stack
                              : from->state == FIBER_DONE ? NULL : &from->asan_fake_stack;
    START_SWITCH(fake_stack, to ? to->stack : b->scheduler_stack_bottom,
                 to ? FIBER_STACK_BYTES : b->scheduler_stack_size);
#ifdef STANDIN_FIBERS_UCONTEXT
    swapcontext(from ? &from->context : &b->scheduler_context, to ? &to->context : &b->scheduler_context);
#else
    standin_switch_stacks(from ? &from->sp : &b->scheduler_sp, to ? to->sp : b->scheduler_sp);
#endif
    arrive(b, from ? from->asan_fake_stack : b->scheduler_fake_stack);
}

/* f reached a barrier or returned. Outside a cooperative block (the runner fiber) the scheduler
 * runs. In one, the next thread of the round runs; after the last, the next round from thread 0
 * when every thread waits at the barrier (it opens), else the scheduler, which finds the block
 * done or its threads disagreeing. Returns when f runs again. */
static void pass_on(blocks *b, fiber *f)
{
    fiber *next = NULL;
    if (b->in_block) {
        block_round *r = &b->round;
        long t = f - b->fibers;
        if (f->state == FIBER_AT_BARRIER) {
            if (r->waiting++ == 0) r->first_waiting = t;
        } else if (r->returned++ == 0) {
            r->first_returned = t;
        }
        if (t + 1 < r->size) {
            next = f + 1;
        } else if (r->returned == 0) {
            r->waiting = 0;
            next = b->fibers;
        }
    }
    switch_to(b, f, next);
}

static void fiber_main(void)
{
    blocks *b = pthread_getspecific(blocks_key);
    arrive(b, NULL);
    fiber *f = b->current;
    b->grid->run(b->grid, f->first, f->end);
    f->state = FIBER_DONE;
    pass_on(b, f);
    standin_complain("a finished fiber was resumed");
    abort();
}

void standin_barrier_wait(standin_item_ids *ids)
{
    blocks *b = ids->blocks;
    if (!b || !b->grid) {
        standin_complain("ctorch_standin_barrier (CT_BARRIER) called outside a kernel's thread");
        abort();
    }
    fiber *f = b->current;
    if (!f && ids->group_size == 1) return; /* a block of one thread: nobody to wait for */
    if (!f) {
        standin_complain("%s: a barrier outside the launch's fibers", b->grid->name);
        abort();
    }
    f->group_id = ids->group_id;
    f->local_id = ids->local_id;
    f->state = FIBER_AT_BARRIER;
    pass_on(b, f);
}

/* The kernels' C build has these inlined (standin_kernels.c.in); these are for everyone else. */
void ctorch_standin_barrier(void)
{
    standin_barrier_wait(&standin_ids);
}
long ctorch_standin_group_id(void)
{
    running_blocks("ctorch_standin_group_id (CT_GROUP_ID)");
    return standin_ids.group_id;
}
long ctorch_standin_local_id(void)
{
    running_blocks("ctorch_standin_local_id (CT_LOCAL_ID)");
    return standin_ids.local_id;
}
long ctorch_standin_group_size(void)
{
    running_blocks("ctorch_standin_group_size (CT_GROUP_SIZE)");
    return standin_ids.group_size;
}

/* ---- the scheduler ---- */

/* The fibers of a launch that stops are left where they are: their stacks start over. */
static void abandon_fibers(blocks *b, long count)
{
    for (long t = 0; t < count; t++) {
        fiber *f = &b->fibers[t];
        if (f->state == FIBER_READY || f->state == FIBER_AT_BARRIER) FORGET_STACK(f->stack);
        f->state = FIBER_IDLE;
    }
}

/* Runs block `group`, whose thread 0 (the runner fiber, fibers[0]) waits at its first barrier,
 * to its end: every other thread starts as a fiber, and the block's rounds run (pass_on) until
 * every thread has returned or the threads disagree. */
static bool run_cooperative_block(blocks *b, long group)
{
    const standin_grid *grid = b->grid;
    long size = grid->block_size;
    if (grid->repeats > 1) {
        standin_complain("%s: a kernel that reaches barriers, launched with a y or z dimension "
                         "above 1 (the stand-in's blocks are 1-D)", grid->name);
        abandon_fibers(b, 1);
        return false;
    }
    make_stacks_usable(b, size);
    for (long t = 1; t < size; t++) start_fiber(&b->fibers[t], group * size + t, group * size + t + 1, size);
    b->round = (block_round){size, 1, 0, 0, -1}; /* thread 0 waits at the first barrier */
    b->in_block = true;
    switch_to(b, NULL, &b->fibers[1]);
    b->in_block = false;
    const block_round *r = &b->round;
    if (r->waiting > 0) {
        standin_complain("%s: block %ld (%ld threads): %ld thread(s) (the first: thread %ld) wait "
                         "at a barrier that %ld thread(s) (the first: thread %ld) returned "
                         "without reaching: every thread of a block must reach every barrier; "
                         "the launch stops", grid->name, group, size, r->waiting, r->first_waiting,
                         r->returned, r->first_returned);
        abandon_fibers(b, size);
        return false;
    }
    for (long t = 0; t < size; t++) b->fibers[t].state = FIBER_IDLE;
    return true;
}

bool standin_run_grid(const standin_grid *grid)
{
    blocks *b = this_thread_blocks();
    if (b->grid) {
        standin_complain("%s: launched from inside the kernel %s", grid->name, b->grid->name);
        abort();
    }
    long size = grid->block_size, total = grid->blocks * grid->block_size;
    standin_item_ids *ids = b->ids;
    b->grid = grid;
    ids->group_size = size;
    ids->leave_runner = 0;
    bool ok = true;
    for (long r = 0; r < grid->repeats && ok; r++) {
        if (size == 1) { /* a barrier of one thread waits for nobody: no fibers */
            grid->run(grid, 0, total);
            continue;
        }
        make_stacks_usable(b, 1);
        fiber *runner = &b->fibers[0];
        for (long next = 0; next < total && ok;) {
            start_fiber(runner, next, total, size);
            switch_to(b, NULL, runner);
            if (runner->state == FIBER_DONE) break;
            long group = runner->group_id;
            if (runner->local_id != 0) {
                standin_complain("%s: block %ld (%ld threads): thread %ld reached a barrier that "
                                 "thread 0 returned without reaching: every thread of a block must "
                                 "reach every barrier; the launch stops", grid->name, group, size,
                                 runner->local_id);
                abandon_fibers(b, 1);
                ok = false;
                break;
            }
            /* Block `group` is cooperative: the runner fiber goes on as its thread 0 and stops
             * after that item. */
            ids->leave_runner = 1;
            ok = run_cooperative_block(b, group);
            ids->leave_runner = 0;
            next = (group + 1) * size;
        }
        runner->state = FIBER_IDLE;
    }
    b->grid = NULL;
    ids->group_size = 1;
    return ok;
}

/* ---- a C function as a kernel, for the tests (standin.h) ---- */

void standin_run_body_items(const standin_grid *grid, long first, long end)
{
    const standin_body *job = grid->job;
    standin_item_ids *ids = standin_thread_ids();
    long size = ids->group_size;
    for (long group = first / size, i = first; i < end; group++) {
        long block_first = group * size, block_end = block_first + size;
        if (block_end > end) block_end = end;
        ids->group_id = group;
        for (; i < block_end; i++) {
            ids->local_id = i - block_first;
            job->body(job->arg);
            if (ids->leave_runner) return;
        }
    }
}

/* A configuration a GPU takes for a 1-D launch. */
static bool valid_blocks(const char *who, long grid, long block)
{
    if (grid >= 1 && grid <= 2147483647L && block >= 1 && block <= MAX_THREADS_PER_BLOCK) return true;
    standin_complain("%s: invalid configuration: %ld blocks of %ld threads", who, grid, block);
    return false;
}

CUresult ctorch_standin_run_blocks_for_testing(void (*body)(void *arg), void *arg, long grid, long block)
{
    if (!body || !valid_blocks(__func__, grid, block)) return CUDA_ERROR_INVALID_VALUE;
    standin_body job = {body, arg};
    standin_grid g = {__func__, standin_run_body_items, &job, grid, block, 1};
    return standin_run_grid(&g) ? CUDA_SUCCESS : CUDA_ERROR_LAUNCH_FAILED;
}

CUresult ctorch_standin_launch_blocks_for_testing(CUstream handle, void (*body)(void *arg), void *arg,
                                                  long grid, long block)
{
    ENTER_CONTEXT(ctx);
    if (!body || !valid_blocks(__func__, grid, block)) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    CUstream s;
    CUresult r = standin_resolve_stream(handle, ctx, &s);
    if (r != CUDA_SUCCESS) return standin_leave(r);
    if (s->ctx != ctx) return standin_leave(CUDA_ERROR_INVALID_HANDLE);
    op *o = standin_op_new(OP_KERNEL);
    o->u.kernel.name = __func__;
    o->u.kernel.body = (standin_body){body, arg};
    o->u.kernel.blocks = grid;
    o->u.kernel.block_size = block;
    o->u.kernel.repeats = 1;
    standin_enqueue(s, o);
    return standin_leave(CUDA_SUCCESS);
}

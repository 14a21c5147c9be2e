/* The stand-in CUDA driver's blocks (standin_internal.h): a launch runs its blocks one after
 * another on the stream's worker thread, and the threads of a block that meet at barriers as
 * fibers of that thread, so that a block's CT_LOCAL arrays (the worker's _Thread_local statics)
 * are shared by its threads and CT_BARRIER() waits for all of them, as on a GPU.
 *
 * Most kernels never reach a barrier, and a fiber per item would cost more than most items, so
 * items run as plain calls of the kernel's runner, which itself runs in one fiber (the runner
 * fiber): when the item of a block's thread 0 reaches a barrier, that block is cooperative, and
 * its other threads start as fibers of their own while the runner fiber waits as thread 0; the
 * scheduler then runs rounds, each resuming every thread of the block until its next barrier or
 * its end, and when the block is done the rest of the launch goes on in a new runner fiber. So a
 * launch of plain kernels costs one fiber, and blocks decide for themselves (a block whose
 * threads all return early, as the last blocks of an oversized grid do, reaches no barrier).
 *
 * A kernel whose threads disagree about barriers is wrong on a GPU (it hangs there, or worse):
 * a barrier reached by a thread whose thread 0 returned without reaching one, or a round where
 * some threads returned while others wait at a barrier. The launch stops there with a complaint
 * naming the kernel and the threads, and fails (the stream's context reports
 * CUDA_ERROR_LAUNCH_FAILED from then on, see standin_workers.c).
 *
 * Fibers switch with a few instructions of assembly on x86-64 (swapcontext makes a system call
 * per switch to save the signal mask, which cooperative kernels would pay twice per thread and
 * barrier), and with ucontext elsewhere (or when STANDIN_FIBERS_UCONTEXT is defined). Their
 * stacks are mapped once per thread, with a guard page below each, and reused; AddressSanitizer
 * is told of every switch. */
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
    long group_id, local_id; /* of the item it runs (the runner fiber's: when it switched out) */
    fiber_state state;
} fiber;

/* What a thread that runs launches has; mapped (not malloc'ed: no heap memory hangs off thread
 * state that LeakSanitizer does not scan), found through a pthread key, unmapped at its exit. */
typedef struct blocks {
    standin_item_ids ids; /* what the running item reads (standin_kernels.h) */
    const standin_grid *grid; /* the launch running, NULL between launches */
    fiber *current;           /* the fiber running, NULL when the scheduler runs */
#ifdef STANDIN_FIBERS_UCONTEXT
    ucontext_t scheduler_context;
#else
    void *scheduler_sp;
#endif
    void *scheduler_fake_stack;
    const void *scheduler_stack_bottom;
    size_t scheduler_stack_size;
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
    b->ids.group_size = 1;
    pthread_setspecific(blocks_key, b);
    return b;
}

standin_item_ids *standin_thread_item_ids(void)
{
    return &this_thread_blocks()->ids;
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

/* f starts over, to run items [first, end) from fiber_main. */
static void start_fiber(blocks *b, fiber *f, long first, long end)
{
    f->first = first;
    f->end = end;
    f->group_id = first / b->ids.group_size;
    f->local_id = first % b->ids.group_size;
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

/* Runs f until it reaches a barrier or its end. */
static void resume(blocks *b, fiber *f)
{
    b->current = f;
    b->ids.group_id = f->group_id;
    b->ids.local_id = f->local_id;
    START_SWITCH(&b->scheduler_fake_stack, f->stack, FIBER_STACK_BYTES);
#ifdef STANDIN_FIBERS_UCONTEXT
    swapcontext(&b->scheduler_context, &f->context);
#else
    standin_switch_stacks(&b->scheduler_sp, f->sp);
#endif
    FINISH_SWITCH(b->scheduler_fake_stack, NULL, NULL);
    b->current = NULL;
}

/* From the running fiber f back to the scheduler; returns when f is resumed. */
static void yield_to_scheduler(blocks *b, fiber *f)
{
    /* A finished fiber's fake stack (AddressSanitizer's, for use after return) is released. */
    START_SWITCH(f->state == FIBER_DONE ? NULL : &f->asan_fake_stack, b->scheduler_stack_bottom,
                 b->scheduler_stack_size);
#ifdef STANDIN_FIBERS_UCONTEXT
    swapcontext(&f->context, &b->scheduler_context);
#else
    standin_switch_stacks(&f->sp, b->scheduler_sp);
#endif
    FINISH_SWITCH(f->asan_fake_stack, &b->scheduler_stack_bottom, &b->scheduler_stack_size);
}

static void fiber_main(void)
{
    blocks *b = pthread_getspecific(blocks_key);
    FINISH_SWITCH(NULL, &b->scheduler_stack_bottom, &b->scheduler_stack_size);
    fiber *f = b->current;
    b->grid->run(b->grid, f->first, f->end);
    f->state = FIBER_DONE;
    yield_to_scheduler(b, f);
    standin_complain("a finished fiber was resumed");
    abort();
}

void ctorch_standin_barrier(void)
{
    blocks *b = running_blocks("ctorch_standin_barrier (CT_BARRIER)");
    fiber *f = b->current;
    if (!f && b->ids.group_size == 1) return; /* a block of one thread: nobody to wait for */
    if (!f) {
        standin_complain("%s: a barrier outside the launch's fibers", b->grid->name);
        abort();
    }
    f->group_id = b->ids.group_id;
    f->local_id = b->ids.local_id;
    f->state = FIBER_AT_BARRIER;
    yield_to_scheduler(b, f);
}

long ctorch_standin_group_id(void)
{
    return running_blocks("ctorch_standin_group_id (CT_GROUP_ID)")->ids.group_id;
}
long ctorch_standin_local_id(void)
{
    return running_blocks("ctorch_standin_local_id (CT_LOCAL_ID)")->ids.local_id;
}
long ctorch_standin_group_size(void)
{
    return running_blocks("ctorch_standin_group_size (CT_GROUP_SIZE)")->ids.group_size;
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
 * to its end: every other thread starts as a fiber, and rounds resume each thread that has not
 * returned until its next barrier. */
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
    for (long t = 1; t < size; t++) start_fiber(b, &b->fibers[t], group * size + t, group * size + t + 1);
    for (bool first_round = true;; first_round = false) {
        long waiting = 0, returned = 0, first_waiting = -1, first_returned = -1;
        for (long t = 0; t < size; t++) {
            fiber *f = &b->fibers[t];
            if (f->state == FIBER_DONE) continue;
            if (!(first_round && t == 0)) resume(b, f); /* thread 0 is at the first barrier */
            if (f->state == FIBER_AT_BARRIER) {
                if (waiting++ == 0) first_waiting = t;
            } else {
                if (returned++ == 0) first_returned = t;
            }
        }
        if (waiting == 0) break;
        if (returned > 0) {
            standin_complain("%s: block %ld (%ld threads): %ld thread(s) (the first: thread %ld) wait "
                             "at a barrier that %ld thread(s) (the first: thread %ld) returned "
                             "without reaching: every thread of a block must reach every barrier; "
                             "the launch stops", grid->name, group, size, waiting, first_waiting,
                             returned, first_returned);
            abandon_fibers(b, size);
            return false;
        }
        for (long t = 0; t < size; t++)
            if (b->fibers[t].state != FIBER_DONE) b->fibers[t].state = FIBER_READY;
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
    b->grid = grid;
    b->ids.group_size = size;
    b->ids.leave_runner = 0;
    bool ok = true;
    for (long r = 0; r < grid->repeats && ok; r++) {
        if (size == 1) { /* a barrier of one thread waits for nobody: no fibers */
            grid->run(grid, 0, total);
            continue;
        }
        make_stacks_usable(b, 1);
        fiber *runner = &b->fibers[0];
        for (long next = 0; next < total && ok;) {
            start_fiber(b, runner, next, total);
            resume(b, runner);
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
            b->ids.leave_runner = 1;
            ok = run_cooperative_block(b, group);
            b->ids.leave_runner = 0;
            next = (group + 1) * size;
        }
        runner->state = FIBER_IDLE;
    }
    b->grid = NULL;
    b->ids.group_size = 1;
    return ok;
}

/* ---- a C function as a kernel, for the tests (standin.h) ---- */

void standin_run_body_items(const standin_grid *grid, long first, long end)
{
    const standin_body *job = grid->job;
    standin_item_ids *ids = standin_thread_item_ids();
    long size = ids->group_size, group = first / size, local = first % size;
    for (long i = first; i < end; i++) {
        ids->group_id = group;
        ids->local_id = local;
        job->body(job->arg);
        if (ids->leave_runner) return;
        if (++local == size) {
            local = 0;
            group++;
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

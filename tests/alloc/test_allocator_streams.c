/* The caching allocator and streams, PyTorch's rule: a block freed on one stream is never handed
 * to another stream's request, and is reused on its own at once; a tensor recorded on another
 * stream (ct_tensor_record_stream) keeps its block out of every pool until that stream's work has
 * finished; emptying the cache waits for such blocks and frees them; a destroyed stream's cached
 * blocks serve the default stream; out of memory waits for pending blocks before giving up.
 *
 *   test_allocator_streams          on opencl:0 (PoCL)
 *   test_allocator_streams --cuda   on cuda:0 of the stand-in driver (ctest sets its environment,
 *                                   64 MiB of device memory)
 *
 * A stream is kept busy with a gate (allocator_streams/stream_gate.h) that holds its work until
 * the test opens it, so nothing depends on how long work takes. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "test_common.h"

#include "alloc/allocator_streams/stream_gate.h"
#include "device/backend_interface.h"
#include "device/device_internal.h"
#include "tensor/tensor_internal.h"

static ct_device device = {CT_OPENCL, 0};

#define ELEMENTS (256 * 1024) /* 1 MiB of float32: one size class */

static void require_device(void)
{
#ifdef CTORCH_HAVE_CUDA
    if (device.type == CT_CUDA && ct_device_count(CT_CUDA) < 1) /* ctest gives --cuda the stand-in */
        fail_msg("the stand-in should give a CUDA device: %s", ct_backend_unavailable_reason(CT_CUDA));
#endif
    if (ct_device_count(device.type) < 1) {
        char name[CT_DEVICE_STRING_MAX];
        print_message("no %s device (%s): skipped\n", ct_device_format(device, name, sizeof name),
                      ct_backend_unavailable_reason(device.type));
        skip();
    }
    if (!stream_gate_available(device.type)) {
        print_message("no stream gate for this device type in this build: skipped\n");
        skip();
    }
}

static ct_memory_stats stats(void)
{
    ct_memory_stats s;
    assert_int_equal(ct_memory_stats_get(device, &s), CT_OK);
    return s;
}

/* A fresh 1 MiB tensor on this thread's current stream of the device. */
static ct_tensor *block_sized(void)
{
    int64_t shape[1] = {ELEMENTS};
    ct_tensor *t = ct_empty(shape, 1, CT_F32, device);
    assert_non_null(t);
    return t;
}

static ct_tensor *filled(double value)
{
    int64_t shape[1] = {ELEMENTS};
    ct_tensor *t = ct_full(shape, 1, value, CT_F32, device);
    assert_non_null(t);
    return t;
}

static void use_stream(ct_stream *stream)
{
    if (stream)
        assert_int_equal(ct_set_stream(stream), CT_OK);
    else
        assert_int_equal(ct_set_default_stream(device), CT_OK);
}

/* Opens a gate from another thread after a pause; `opened` says when it has. The pause only
 * makes a call that should wait for the gate really wait: the tests pass however long it is. */
static struct late_opening {
    stream_gate *gate;
    atomic_bool opened;
    pthread_t thread;
    bool started; /* joined by the test's teardown */
} late;

/* Every test starts with nothing cached and the default stream current. */
static int start_clean(void **state)
{
    (void)state;
    ct_set_default_stream(device);
    ct_empty_cache(device);
    return 0;
}

/* A test that failed may have left a gate closed: open it, so that the next tests run. */
static int open_every_gate(void **state)
{
    (void)state;
    if (late.started) pthread_join(late.thread, NULL);
    late.started = false;
    stream_gates_release();
    ct_set_default_stream(device);
    return 0;
}

static void *open_after_a_pause(void *unused)
{
    (void)unused;
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
    atomic_store(&late.opened, true);
    stream_gate_open(late.gate);
    return NULL;
}

static void open_later(stream_gate *gate)
{
    late.gate = gate;
    atomic_store(&late.opened, false);
    assert_int_equal(pthread_create(&late.thread, NULL, open_after_a_pause, NULL), 0);
    late.started = true;
}

/* ---- the backends' event query ---- */

static void an_event_behind_held_work_has_not_happened_until_the_work_runs(void **state)
{
    (void)state;
    require_device();
    const ct_backend *backend = ct_backend_of(device);
    ct_stream *stream = ct_stream_create(device);
    void *event = NULL;
    assert_int_equal(backend->event_create(device.index, &event), CT_OK);
    bool complete = false;
    assert_int_equal(backend->event_query(device.index, event, &complete), CT_OK);
    assert_true(complete); /* never recorded: it has happened */
    stream_gate *gate = stream_gate_close(stream);
    assert_int_equal(backend->event_record(device.index, event, ct_stream_handle(stream)), CT_OK);
    assert_int_equal(backend->event_query(device.index, event, &complete), CT_OK);
    assert_false(complete);
    stream_gate_open(gate);
    assert_int_equal(ct_stream_synchronize(stream), CT_OK);
    assert_int_equal(backend->event_query(device.index, event, &complete), CT_OK);
    assert_true(complete);
    backend->event_destroy(device.index, event);
    ct_stream_destroy(stream);
}

/* ---- pools per stream ---- */

static void a_block_freed_on_one_stream_is_not_handed_to_another(void **state)
{
    (void)state;
    require_device();
    ct_stream *b = ct_stream_create(device), *c = ct_stream_create(device);
    assert_non_null(b);
    assert_non_null(c);
    /* freed on the default stream, asked for on b */
    ct_tensor *x = block_sized();
    void *x_block = ct_tensor_handle(x);
    ct_release(x);
    ct_memory_stats before = stats();
    use_stream(b);
    ct_tensor *y = block_sized();
    assert_ptr_not_equal(ct_tensor_handle(y), x_block);
    assert_int_equal(stats().device_allocations - before.device_allocations, 1);
    assert_int_equal(stats().cache_hits, before.cache_hits);
    /* freed on b, asked for on c and on the default stream */
    void *y_block = ct_tensor_handle(y);
    ct_release(y);
    use_stream(c);
    ct_tensor *z = block_sized();
    assert_ptr_not_equal(ct_tensor_handle(z), y_block);
    use_stream(NULL);
    ct_tensor *w = block_sized();
    assert_ptr_equal(ct_tensor_handle(w), x_block); /* the default stream's own block */
    assert_ptr_not_equal(ct_tensor_handle(w), y_block);
    ct_release(z);
    ct_release(w);
    ct_stream_destroy(b);
    ct_stream_destroy(c);
}

static void *release_on_the_default_stream(void *arg)
{
    ct_release(arg);
    return NULL;
}

static void a_block_freed_on_a_stream_is_reused_on_that_stream(void **state)
{
    (void)state;
    require_device();
    ct_stream *a = ct_stream_create(device);
    use_stream(a);
    ct_tensor *x = block_sized();
    void *x_block = ct_tensor_handle(x);
    ct_release(x);
    ct_memory_stats before = stats();
    ct_tensor *y = block_sized();
    assert_ptr_equal(ct_tensor_handle(y), x_block);
    assert_int_equal(stats().cache_hits - before.cache_hits, 1);
    assert_int_equal(stats().device_allocations, before.device_allocations);
    /* Released by a thread whose current stream is the default one: back to a's pool all the
     * same, since a block belongs to the stream it was allocated on. */
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, release_on_the_default_stream, y), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    ct_tensor *z = block_sized();
    assert_ptr_equal(ct_tensor_handle(z), x_block);
    ct_release(z);
    use_stream(NULL);
    ct_stream_destroy(a);
}

/* ---- record_stream ---- */

static void a_recorded_block_waits_for_the_recording_stream_before_reuse(void **state)
{
    (void)state;
    require_device();
    ct_stream *a = ct_stream_create(device), *b = ct_stream_create(device);
    ct_tensor *warm = filled(0.0); /* the kernels built, and first waited for, on no held stream */
    ct_release(ct_mul_scalar(warm, 2.0));
    ct_release(warm);
    assert_int_equal(ct_synchronize(device), CT_OK);

    use_stream(a);
    ct_tensor *x = filled(1.0);
    void *x_block = ct_tensor_handle(x);
    assert_int_equal(ct_stream_synchronize(a), CT_OK);
    stream_gate *gate = stream_gate_close(b);
    use_stream(b);
    ct_tensor *doubled = ct_mul_scalar(x, 2.0); /* queued on b behind the gate: reads x later */
    assert_non_null(doubled);
    assert_int_equal(ct_tensor_record_stream(x, b), CT_OK);
    use_stream(a);
    ct_release(x); /* b has not read it yet */
    ct_tensor *sevens = filled(7.0); /* must not be written over x */
    assert_int_equal(ct_stream_synchronize(a), CT_OK); /* the sevens are written */

    stream_gate_open(gate);
    assert_int_equal(ct_stream_synchronize(b), CT_OK);
    static float values[ELEMENTS];
    assert_int_equal(ct_tensor_to_array(doubled, values, sizeof values), CT_OK);
    for (int i = 0; i < ELEMENTS; i++)
        if (values[i] != 2.0f) fail_msg("element %d is %g, not 2: x's memory was reused before b read it", i, values[i]);
    assert_ptr_not_equal(ct_tensor_handle(sevens), x_block);
    /* b's work is done: the next request on a, x's stream, gets x's block back */
    ct_tensor *again = block_sized();
    assert_ptr_equal(ct_tensor_handle(again), x_block);
    ct_release(again);
    ct_release(sevens);
    ct_release(doubled);
    use_stream(NULL);
    ct_stream_destroy(a);
    ct_stream_destroy(b);
}

static void a_block_recorded_on_its_own_stream_or_a_finished_one_is_reused_at_once(void **state)
{
    (void)state;
    require_device();
    ct_stream *a = ct_stream_create(device), *b = ct_stream_create(device);
    use_stream(a);
    ct_tensor *x = block_sized();
    void *x_block = ct_tensor_handle(x);
    assert_int_equal(ct_tensor_record_stream(x, a), CT_OK); /* its own: nothing to wait for */
    assert_int_equal(ct_tensor_record_stream(x, b), CT_OK);
    assert_int_equal(ct_tensor_record_stream(x, b), CT_OK); /* twice is once */
    ct_release(x);
    assert_int_equal(ct_stream_synchronize(b), CT_OK);
    ct_tensor *y = block_sized(); /* b's event has happened: asking finds it */
    assert_ptr_equal(ct_tensor_handle(y), x_block);
    ct_release(y);
    use_stream(NULL);
    ct_stream_destroy(a);
    ct_stream_destroy(b);
}

static void the_default_stream_can_be_recorded_with_null(void **state)
{
    (void)state;
    require_device();
    ct_stream *a = ct_stream_create(device);
    stream_gate *gate = stream_gate_close(a); /* a's own work does not matter to a */
    use_stream(a);
    ct_tensor *x = block_sized();
    void *x_block = ct_tensor_handle(x);
    /* ct_current_stream is NULL on the default stream: recording it is the usual call */
    use_stream(NULL);
    assert_int_equal(ct_tensor_record_stream(x, ct_current_stream(device)), CT_OK);
    ct_release(x);
    ct_event *after = ct_event_create(device); /* after the allocator's event on the default stream */
    assert_int_equal(ct_event_record(after, NULL), CT_OK);
    assert_int_equal(ct_event_synchronize(after), CT_OK);
    ct_event_destroy(after);
    use_stream(a);
    ct_tensor *y = block_sized(); /* the default stream's event has happened; a's work is not asked */
    assert_ptr_equal(ct_tensor_handle(y), x_block);
    ct_release(y);
    stream_gate_open(gate);
    use_stream(NULL);
    ct_stream_destroy(a);
}

static void record_stream_refuses_null_and_a_stream_of_another_device(void **state)
{
    (void)state;
    require_device();
    ct_stream *own = ct_stream_create(device), *cpu = ct_stream_create(CT_DEVICE_CPU);
    ct_clear_error();
    assert_int_equal(ct_tensor_record_stream(NULL, own), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_tensor_record_stream: argument 't' is NULL");
    ct_tensor *x = block_sized();
    char name[CT_DEVICE_STRING_MAX], expected[200];
    snprintf(expected, sizeof expected, "the tensor is on %s and the stream belongs to cpu",
             ct_device_format(device, name, sizeof name));
    assert_int_equal(ct_tensor_record_stream(x, cpu), CT_ERR_DEVICE);
    assert_error(CT_ERR_DEVICE, expected);
    if (ct_device_count(device.type) >= 2) {
        ct_device second = {device.type, 1};
        ct_stream *other = ct_stream_create(second);
        char other_name[CT_DEVICE_STRING_MAX];
        snprintf(expected, sizeof expected, "the tensor is on %s and the stream belongs to %s", name,
                 ct_device_format(second, other_name, sizeof other_name));
        assert_int_equal(ct_tensor_record_stream(x, other), CT_ERR_DEVICE);
        assert_error(CT_ERR_DEVICE, expected);
        ct_stream_destroy(other);
    }
    /* what is accepted: its own device's streams, NULL (the default stream), a CPU tensor on a CPU
     * stream, a pinned tensor on a CPU stream, an empty tensor */
    assert_int_equal(ct_tensor_record_stream(x, own), CT_OK);
    assert_int_equal(ct_tensor_record_stream(x, NULL), CT_OK);
    int64_t shape[1] = {16}, none[1] = {0};
    ct_tensor *host = ct_zeros(shape, 1, CT_F32, CT_DEVICE_CPU), *pinned = ct_empty_pinned(shape, 1, CT_F32);
    ct_tensor *empty = ct_empty(none, 1, CT_F32, device);
    assert_int_equal(ct_tensor_record_stream(host, cpu), CT_OK);
    assert_int_equal(ct_tensor_record_stream(pinned, cpu), CT_OK);
    assert_int_equal(ct_tensor_record_stream(empty, own), CT_OK);
    assert_int_equal(ct_last_error(), CT_OK);
    ct_release(host), ct_release(pinned), ct_release(empty), ct_release(x);
    ct_stream_destroy(own);
    ct_stream_destroy(cpu);
}

/* ---- emptying the cache, destroying streams, out of memory ---- */

static void empty_cache_waits_for_pending_blocks_and_frees_them(void **state)
{
    (void)state;
    require_device();
    ct_stream *b = ct_stream_create(device);
    ct_tensor *x = block_sized();
    ct_tensor *y = block_sized(); /* one cached on the default stream too */
    stream_gate *gate = stream_gate_close(b);
    assert_int_equal(ct_tensor_record_stream(x, b), CT_OK);
    ct_memory_stats before = stats();
    ct_release(x);
    ct_release(y);
    assert_int_equal(stats().reserved - stats().allocated, 2 * (1 << 20));
    open_later(gate);
    ct_empty_cache(device); /* waits for b's event, then frees x's block with y's */
    assert_true(atomic_load(&late.opened));
    assert_int_equal(stats().reserved, stats().allocated);
    assert_int_equal(stats().device_frees - before.device_frees, 2);
    ct_stream_destroy(b);
}

static void a_destroyed_streams_blocks_serve_the_default_stream(void **state)
{
    (void)state;
    require_device();
    /* cached in the stream's pool when it is destroyed */
    ct_stream *s = ct_stream_create(device);
    use_stream(s);
    ct_tensor *x = block_sized();
    void *x_block = ct_tensor_handle(x);
    ct_release(x);
    use_stream(NULL);
    ct_memory_stats before = stats();
    ct_stream_destroy(s);
    assert_int_equal(stats().reserved, before.reserved); /* kept, not freed */
    ct_tensor *y = block_sized();
    assert_ptr_equal(ct_tensor_handle(y), x_block);
    ct_release(y);
    ct_empty_cache(device);

    /* alive when its stream is destroyed, freed afterwards */
    s = ct_stream_create(device);
    use_stream(s);
    x = block_sized();
    x_block = ct_tensor_handle(x);
    use_stream(NULL);
    ct_stream_destroy(s);
    ct_release(x);
    y = block_sized();
    assert_ptr_equal(ct_tensor_handle(y), x_block);
    ct_release(y);

    /* recorded on a stream that is destroyed before the free: nothing left to wait for */
    s = ct_stream_create(device);
    x = block_sized();
    x_block = ct_tensor_handle(x);
    assert_int_equal(ct_tensor_record_stream(x, s), CT_OK);
    ct_stream_destroy(s);
    ct_release(x);
    y = block_sized();
    assert_ptr_equal(ct_tensor_handle(y), x_block);
    ct_release(y);
    /* a new stream does not inherit anything of the old ones */
    s = ct_stream_create(device);
    use_stream(s);
    ct_memory_stats fresh = stats();
    ct_release(block_sized());
    assert_int_equal(stats().device_allocations - fresh.device_allocations, 1);
    use_stream(NULL);
    ct_stream_destroy(s);
}

/* On the stand-in's 64 MiB: a pending 40 MiB block is waited for and reused rather than failing. */
static void out_of_memory_waits_for_pending_blocks_first(void **state)
{
    (void)state;
    require_device();
    if (device.type != CT_CUDA) {
        print_message("needs a device with little memory (the stand-in's 64 MiB): skipped\n");
        skip();
    }
    int64_t shape[1] = {10 * 1024 * 1024}; /* 40 MiB */
    ct_stream *b = ct_stream_create(device);
    ct_tensor *x = ct_empty(shape, 1, CT_F32, device);
    assert_non_null(x);
    void *x_block = ct_tensor_handle(x);
    stream_gate *gate = stream_gate_close(b);
    assert_int_equal(ct_tensor_record_stream(x, b), CT_OK);
    ct_release(x);
    open_later(gate);
    ct_memory_stats before = stats();
    ct_tensor *y = ct_empty(shape, 1, CT_F32, device); /* no room for a second: waits for b */
    if (!y) fail_msg("%s", ct_last_error_message());
    assert_true(atomic_load(&late.opened));
    /* x's block itself, taken from the pool once b was done: not freed and allocated again */
    assert_ptr_equal(ct_tensor_handle(y), x_block);
    assert_int_equal(stats().cache_hits - before.cache_hits, 1);
    assert_int_equal(stats().device_frees, before.device_frees);
    ct_release(y);
    ct_stream_destroy(b);
    ct_empty_cache(device);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--cuda") == 0) device = (ct_device){CT_CUDA, 0};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(an_event_behind_held_work_has_not_happened_until_the_work_runs, start_clean, open_every_gate),
        cmocka_unit_test_setup_teardown(a_block_freed_on_one_stream_is_not_handed_to_another, start_clean, open_every_gate),
        cmocka_unit_test_setup_teardown(a_block_freed_on_a_stream_is_reused_on_that_stream, start_clean, open_every_gate),
        cmocka_unit_test_setup_teardown(a_recorded_block_waits_for_the_recording_stream_before_reuse, start_clean, open_every_gate),
        cmocka_unit_test_setup_teardown(a_block_recorded_on_its_own_stream_or_a_finished_one_is_reused_at_once, start_clean, open_every_gate),
        cmocka_unit_test_setup_teardown(the_default_stream_can_be_recorded_with_null, start_clean, open_every_gate),
        cmocka_unit_test_setup_teardown(record_stream_refuses_null_and_a_stream_of_another_device, start_clean, open_every_gate),
        cmocka_unit_test_setup_teardown(empty_cache_waits_for_pending_blocks_and_frees_them, start_clean, open_every_gate),
        cmocka_unit_test_setup_teardown(a_destroyed_streams_blocks_serve_the_default_stream, start_clean, open_every_gate),
        cmocka_unit_test_setup_teardown(out_of_memory_waits_for_pending_blocks_first, start_clean, open_every_gate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

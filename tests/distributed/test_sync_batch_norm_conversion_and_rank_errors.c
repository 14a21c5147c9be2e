/* ct_convert_sync_batch_norm turns the BatchNorm1d/2d layers of a tree into SyncBatchNorm in place,
 * and an error of SyncBatchNorm on one rank (an input that does not fit, a layer on another device
 * than its input) reaches every rank instead of leaving the others waiting. Run by ctest under
 * mpirun with 2 ranks and 1 (where SyncBatchNorm is plain BatchNorm). */
#include "dist_test.h"
#include "sync_batch_norm_test.h"

static int rank_, world_;

/* Conversion: only BatchNorm1d/2d layers (not a custom module of that kind), in place, counted,
 * with the same parameter and buffer tensors, printed as PyTorch prints SyncBatchNorm. */
static void conversion_turns_batch_norm_layers_into_sync_batch_norm_in_place(void **state)
{
    (void)state;
    ct_batch_norm_options quiet = {.eps = 1e-3, .momentum = 0.01, .affine = false, .track_running_stats = true};
    ct_module *inner = ct_sequential((ct_module *[]){ct_batch_norm2d(2, &quiet)}, 1);
    ct_module *custom = ct_module_create("BatchNorm1d", NULL, NULL, NULL);
    ct_module *net = ct_sequential((ct_module *[]){ct_linear(4, 3, true), ct_batch_norm1d(3, NULL), ct_relu_module(),
                                                  inner, custom},
                                   5);
    assert_non_null(net);
    ct_tensor *weight = ct_module_parameter(net, "1.weight"), *mean = ct_module_buffer(net, "3.0.running_mean");
    int64_t parameters = ct_module_parameter_count(net);
    int converted = -1;
    assert_int_equal(ct_convert_sync_batch_norm(net, &converted), CT_OK);
    assert_int_equal(converted, 2);
    assert_string_equal(ct_module_kind(ct_module_child(net, "1")), "SyncBatchNorm");
    assert_string_equal(ct_module_kind(ct_module_child(net, "3.0")), "SyncBatchNorm");
    assert_string_equal(ct_module_kind(ct_module_child(net, "0")), "Linear");
    assert_string_equal(ct_module_kind(ct_module_child(net, "2")), "ReLU");
    assert_string_equal(ct_module_kind(ct_module_child(net, "4")), "BatchNorm1d");
    ct_tensor *weight_after = ct_module_parameter(net, "1.weight"), *mean_after = ct_module_buffer(net, "3.0.running_mean");
    assert_ptr_equal(weight_after, weight);
    assert_ptr_equal(mean_after, mean);
    assert_int_equal(ct_module_parameter_count(net), parameters);
    char *text = ct_module_to_string(net);
    assert_non_null(text);
    if (!strstr(text, "(1): SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)") ||
        !strstr(text, "(0): SyncBatchNorm(2, eps=0.001, momentum=0.01, affine=False, track_running_stats=True)"))
        fail_msg("printout:\n%s", text);
    free(text);
    /* converting again finds nothing left to convert */
    assert_int_equal(ct_convert_sync_batch_norm(net, NULL), CT_OK);
    assert_int_equal(ct_convert_sync_batch_norm(net, &converted), CT_OK);
    assert_int_equal(converted, 0);
    /* the converted tree still trains (a batch of 4 rows on every rank) */
    int64_t shape[2] = {4, 4};
    ct_scope_push();
    ct_tensor *x = ct_randn(shape, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *y = ct_module_forward(ct_module_child(net, "1"), ct_module_forward(ct_module_child(net, "0"), x));
    assert_non_null(y);
    assert_int_equal(ct_backward(ct_sum(y, NULL, 0, false)), CT_OK);
    ct_scope_pop();
    ct_release(weight);
    ct_release(mean);
    ct_release(weight_after);
    ct_release(mean_after);
    ct_module_release(net);
    /* a converted root */
    ct_module *root = ct_batch_norm1d(5, NULL);
    assert_int_equal(ct_convert_sync_batch_norm(root, &converted), CT_OK);
    assert_int_equal(converted, 1);
    assert_string_equal(ct_module_kind(root), "SyncBatchNorm");
    ct_module_release(root);
    ct_clear_error();
    converted = 7;
    assert_int_equal(ct_convert_sync_batch_norm(NULL, &converted), CT_ERR_NULL_ARGUMENT);
    assert_int_equal(converted, 0);
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_convert_sync_batch_norm: argument 'module'");
}

/* A rank whose input does not fit fails, and the others fail with its reason instead of waiting
 * for it; the next forward works again. Too few values over all ranks together is an error on
 * every rank. */
static void errors_on_one_rank_reach_every_rank(void **state)
{
    (void)state;
    ct_module *sync = make_bn(1, 3, &BATCH_NORM_DEFAULTS);
    assert_int_equal(ct_convert_sync_batch_norm(sync, NULL), CT_OK);
    int bad_rank = world_ - 1;
    int64_t good_shape[2] = {4, 3}, bad_shape[2] = {4, 5};
    ct_scope_push();
    ct_clear_error();
    ct_tensor *x = ct_randn(rank_ == bad_rank ? bad_shape : good_shape, 2, CT_F32, CT_DEVICE_CPU);
    assert_null(ct_module_forward(sync, x));
    if (rank_ == bad_rank) {
        assert_error(CT_ERR_SHAPE, "SyncBatchNorm(3): the input has shape [4, 5]; its dim 1 (channels) must be 3");
    } else {
        char expected[128];
        snprintf(expected, sizeof expected, "rank %d could not take part: SyncBatchNorm(3): the input", bad_rank);
        assert_error(CT_ERR_SHAPE, expected);
    }
    ct_tensor *good = ct_randn(good_shape, 2, CT_F32, CT_DEVICE_CPU);
    assert_non_null(ct_module_forward(sync, good));
    /* one value per channel over all ranks: rank 0 one row, the others none */
    int64_t one_row[2] = {rank_ == 0 ? 1 : 0, 3};
    assert_null(ct_module_forward(sync, ct_randn(one_row, 2, CT_F32, CT_DEVICE_CPU)));
    assert_error(CT_ERR_SHAPE, "expected more than 1 value per channel when training");
    ct_scope_pop();
    ct_module_release(sync);
}

/* A rank whose layer is on another device than its input fails before communicating, naming the
 * devices, and the others fail with its reason (in a world of 1 the layer is plain BatchNorm). */
static void a_layer_on_another_device_than_the_input_fails_on_every_rank(void **state)
{
    (void)state;
    ct_device devices[DIST_TEST_MAX_DEVICES];
    if (dist_test_devices(devices) < 2) {
        printf("skipped: one device here (the cpu)\n");
        skip();
    }
    ct_module *sync = make_bn(1, 3, &BATCH_NORM_DEFAULTS);
    assert_int_equal(ct_convert_sync_batch_norm(sync, NULL), CT_OK);
    int bad_rank = world_ - 1;
    if (rank_ == bad_rank) assert_int_equal(ct_module_to(sync, devices[1]), CT_OK);
    int64_t shape[2] = {4, 3};
    ct_scope_push();
    ct_clear_error();
    assert_null(ct_module_forward(sync, ct_randn(shape, 2, CT_F32, CT_DEVICE_CPU)));
    if (rank_ == bad_rank) {
        assert_error(CT_ERR_DEVICE, "expected all tensors to be on the same device");
    } else {
        char expected[64];
        snprintf(expected, sizeof expected, "rank %d could not take part: SyncBatchNorm", bad_rank);
        assert_error(CT_ERR_DEVICE, expected);
    }
    ct_scope_pop();
    ct_module_release(sync);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conversion_turns_batch_norm_layers_into_sync_batch_norm_in_place),
        cmocka_unit_test(errors_on_one_rank_reach_every_rank),
        cmocka_unit_test(a_layer_on_another_device_than_the_input_fails_on_every_rank),
    };
    return dist_test_main(tests, DIST_TEST_LEN(tests), &rank_, &world_);
}

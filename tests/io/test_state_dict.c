/* State dicts: ordered unique names, references held and released, lookups, removal, the
 * `module.` prefix stripped and added (with clashes reported and nothing renamed), metadata. */
#include "test_common.h"

static ct_tensor *scalar(double value)
{
    return ct_full(NULL, 0, value, CT_F32, CT_DEVICE_CPU);
}

static double value_of(ct_tensor *t)
{
    double v = -1;
    assert_int_equal(ct_item(t, &v), CT_OK);
    return v;
}

static void keeps_insertion_order_and_finds_names(void **state)
{
    (void)state;
    ct_state_dict *sd = ct_state_dict_create();
    assert_non_null(sd);
    const char *names[] = {"fc2.weight", "fc1.weight", "fc1.bias", ""};
    for (int k = 0; k < 4; k++) {
        ct_tensor *t = scalar(k);
        assert_int_equal(ct_state_dict_add(sd, names[k], t), CT_OK);
        ct_release(t);
    }
    assert_int_equal(ct_state_dict_count(sd), 4);
    for (int k = 0; k < 4; k++) {
        assert_string_equal(ct_state_dict_name_at(sd, k), names[k]);
        assert_int_equal(ct_state_dict_find(sd, names[k]), k);
        ct_tensor *t = ct_state_dict_get(sd, names[k]);
        assert_true(value_of(t) == k);
        ct_release(t);
        t = ct_state_dict_tensor_at(sd, k);
        assert_true(value_of(t) == k);
        ct_release(t);
    }
    assert_true(ct_state_dict_contains(sd, "fc1.bias"));
    assert_false(ct_state_dict_contains(sd, "fc1.bia"));
    assert_int_equal(ct_state_dict_find(sd, "nope"), -1);
    assert_int_equal(ct_last_error(), CT_OK); /* find records nothing */
    ct_state_dict_free(sd);
}

static void holds_one_reference_per_tensor(void **state)
{
    (void)state;
    ct_state_dict *sd = ct_state_dict_create();
    ct_tensor *t = scalar(1);
    assert_int_equal(ct_state_dict_add(sd, "a", t), CT_OK);
    assert_int_equal(ct_refcount(t), 2);
    ct_tensor *got = ct_state_dict_get(sd, "a");
    assert_ptr_equal(got, t);
    assert_int_equal(ct_refcount(t), 3);
    ct_release(got);
    ct_tensor *other = scalar(2);
    assert_int_equal(ct_state_dict_set(sd, "a", other), CT_OK); /* replaces, same place */
    assert_int_equal(ct_refcount(t), 1);
    assert_int_equal(ct_refcount(other), 2);
    assert_int_equal(ct_state_dict_set(sd, "b", t), CT_OK); /* appends */
    assert_string_equal(ct_state_dict_name_at(sd, 1), "b");
    ct_state_dict_free(sd);
    assert_int_equal(ct_refcount(t), 1);
    assert_int_equal(ct_refcount(other), 1);
    ct_release(t);
    ct_release(other);
    ct_state_dict_free(NULL);
}

/* A tensor recorded in the caller's scope and held by a state dict: the pop releases the
 * caller's reference, the state dict keeps its own, and freeing it after the pop is fine. */
static void works_with_scopes(void **state)
{
    (void)state;
    ct_state_dict *sd = ct_state_dict_create();
    ct_scope_push();
    ct_tensor *t = scalar(7);
    assert_int_equal(ct_state_dict_add(sd, "w", t), CT_OK);
    ct_tensor *got = ct_state_dict_get(sd, "w"); /* recorded in the scope too */
    assert_int_equal(ct_refcount(t), 3);
    (void)got;
    ct_state_dict_free(sd); /* releases the state dict's reference only */
    assert_int_equal(ct_refcount(t), 2);
    sd = ct_state_dict_create();
    assert_int_equal(ct_state_dict_add(sd, "w", t), CT_OK);
    assert_int_equal(ct_scope_pop(), CT_OK);
    assert_int_equal(ct_refcount(t), 1);
    ct_tensor *again = ct_state_dict_get(sd, "w");
    assert_true(value_of(again) == 7);
    ct_release(again);
    ct_state_dict_free(sd);
}

static void removes_names_and_keeps_the_order_of_the_rest(void **state)
{
    (void)state;
    ct_state_dict *sd = ct_state_dict_create();
    char name[32];
    enum { N = 5000 }; /* enough to grow the name index several times */
    for (int k = 0; k < N; k++) {
        snprintf(name, sizeof name, "layer%d.weight", k);
        ct_tensor *t = scalar(k);
        assert_int_equal(ct_state_dict_add(sd, name, t), CT_OK);
        ct_release(t);
    }
    for (int k = 0; k < N; k += 2) {
        snprintf(name, sizeof name, "layer%d.weight", k);
        assert_int_equal(ct_state_dict_remove(sd, name), CT_OK);
    }
    assert_int_equal(ct_state_dict_count(sd), N / 2);
    for (int k = 0; k < N / 2; k++) {
        snprintf(name, sizeof name, "layer%d.weight", 2 * k + 1);
        assert_string_equal(ct_state_dict_name_at(sd, k), name);
        assert_int_equal(ct_state_dict_find(sd, name), k);
    }
    assert_false(ct_state_dict_contains(sd, "layer0.weight"));
    assert_int_equal(ct_state_dict_remove(sd, "layer0.weight"), CT_ERR_INDEX);
    assert_error(CT_ERR_INDEX, "has no tensor named 'layer0.weight'");
    ct_state_dict_free(sd);
}

static bool is_odd_layer(const char *name, void *context)
{
    (*(int *)context)++;
    return atoi(name + strlen("layer")) % 2 == 1;
}

/* Many names removed in one pass, the rest in order and found. */
static void removes_every_matching_name_at_once(void **state)
{
    (void)state;
    ct_state_dict *sd = ct_state_dict_create();
    char name[32];
    enum { N = 40000 };
    for (int k = 0; k < N; k++) {
        snprintf(name, sizeof name, "layer%d", k);
        ct_tensor *t = scalar(k);
        assert_int_equal(ct_state_dict_add(sd, name, t), CT_OK);
        ct_release(t);
    }
    int calls = 0;
    assert_int_equal(ct_state_dict_remove_matching(sd, is_odd_layer, &calls), CT_OK);
    assert_int_equal(calls, N);
    assert_int_equal(ct_state_dict_count(sd), N / 2);
    for (int k = 0; k < N / 2; k++) {
        snprintf(name, sizeof name, "layer%d", 2 * k);
        assert_string_equal(ct_state_dict_name_at(sd, k), name);
        assert_int_equal(ct_state_dict_find(sd, name), k);
    }
    assert_false(ct_state_dict_contains(sd, "layer1"));
    assert_int_equal(ct_state_dict_remove_matching(sd, NULL, NULL), CT_ERR_NULL_ARGUMENT);
    assert_int_equal(ct_state_dict_remove_matching(NULL, is_odd_layer, &calls), CT_ERR_NULL_ARGUMENT);
    ct_state_dict_free(sd);
}

static void bad_input_is_reported(void **state)
{
    (void)state;
    ct_state_dict *sd = ct_state_dict_create();
    ct_tensor *t = scalar(1);
    assert_int_equal(ct_state_dict_add(sd, "a", t), CT_OK);
    assert_int_equal(ct_state_dict_add(sd, "a", t), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "already has 'a'");
    assert_int_equal(ct_state_dict_add(sd, "__metadata__", t), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "reserved by the safetensors format");
    assert_int_equal(ct_state_dict_add(sd, "bad\xff", t), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "is not valid UTF-8");
    assert_int_equal(ct_state_dict_add(sd, NULL, t), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'name'");
    assert_int_equal(ct_state_dict_add(sd, "b", NULL), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'t'");
    assert_int_equal(ct_state_dict_add(NULL, "b", t), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'sd'");
    assert_null(ct_state_dict_get(sd, "b"));
    assert_error(CT_ERR_INDEX, "no tensor named 'b' (it has 1)");
    assert_null(ct_state_dict_name_at(sd, 1));
    assert_error(CT_ERR_INDEX, "index 1 is out of range; there are 1");
    assert_null(ct_state_dict_tensor_at(sd, -1));
    assert_error(CT_ERR_INDEX, "index -1 is out of range");
    assert_int_equal(ct_state_dict_count(NULL), 0);
    assert_error(CT_ERR_NULL_ARGUMENT, "ct_state_dict_count: argument 'sd' is NULL");
    assert_int_equal(ct_state_dict_count(sd), 1);
    ct_release(t);
    ct_state_dict_free(sd);
}

static ct_state_dict *dict_of(const char *const *names, int count)
{
    ct_state_dict *sd = ct_state_dict_create();
    for (int k = 0; k < count; k++) {
        ct_tensor *t = scalar(k);
        assert_int_equal(ct_state_dict_add(sd, names[k], t), CT_OK);
        ct_release(t);
    }
    return sd;
}

static void assert_names(const ct_state_dict *sd, const char *const *names, int count)
{
    assert_int_equal(ct_state_dict_count(sd), count);
    for (int k = 0; k < count; k++) {
        assert_string_equal(ct_state_dict_name_at(sd, k), names[k]);
        assert_int_equal(ct_state_dict_find(sd, names[k]), k);
    }
}

/* DataParallel's names load into a plain model, and back. */
static void strips_and_adds_the_module_prefix(void **state)
{
    (void)state;
    const char *wrapped[] = {"module.fc1.weight", "module.fc1.bias", "module.bn.running_mean"};
    const char *plain[] = {"fc1.weight", "fc1.bias", "bn.running_mean"};
    ct_state_dict *sd = dict_of(wrapped, 3);
    assert_int_equal(ct_state_dict_strip_prefix(sd, "module."), CT_OK);
    assert_names(sd, plain, 3);
    ct_tensor *t = ct_state_dict_get(sd, "fc1.bias");
    assert_true(value_of(t) == 1);
    ct_release(t);
    assert_int_equal(ct_state_dict_strip_prefix(sd, "module."), CT_OK); /* nothing to strip */
    assert_names(sd, plain, 3);
    assert_int_equal(ct_state_dict_add_prefix(sd, "module."), CT_OK);
    assert_names(sd, wrapped, 3);
    ct_state_dict_free(sd);

    const char *mixed[] = {"module.a", "b", "modulex"};
    const char *mixed_stripped[] = {"a", "b", "modulex"};
    sd = dict_of(mixed, 3);
    assert_int_equal(ct_state_dict_strip_prefix(sd, "module."), CT_OK);
    assert_names(sd, mixed_stripped, 3);
    ct_state_dict_free(sd);
}

static void a_prefix_clash_renames_nothing(void **state)
{
    (void)state;
    const char *names[] = {"module.fc.weight", "fc.bias", "fc.weight"};
    ct_state_dict *sd = dict_of(names, 3);
    assert_int_equal(ct_state_dict_strip_prefix(sd, "module."), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "'module.fc.weight' and 'fc.weight' would both be named "
                 "'fc.weight'; nothing was renamed");
    assert_names(sd, names, 3);
    ct_state_dict_free(sd);

    const char *metadata_like[] = {"x__metadata__"};
    sd = dict_of(metadata_like, 1);
    assert_int_equal(ct_state_dict_strip_prefix(sd, "x"), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "'x__metadata__' would become '__metadata__'");
    assert_names(sd, metadata_like, 1);
    assert_int_equal(ct_state_dict_add_prefix(sd, NULL), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'prefix'");
    assert_int_equal(ct_state_dict_add_prefix(sd, "\xc3"), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "is not valid UTF-8");
    ct_state_dict_free(sd);

    const char *empty_after[] = {"module.", "x"};
    const char *empty_names[] = {"", "x"};
    sd = dict_of(empty_after, 2);
    assert_int_equal(ct_state_dict_strip_prefix(sd, "module."), CT_OK);
    assert_names(sd, empty_names, 2);
    ct_state_dict_free(sd);
}

static void keeps_string_metadata(void **state)
{
    (void)state;
    ct_state_dict *sd = ct_state_dict_create();
    assert_int_equal(ct_state_dict_set_metadata(sd, "model", "mlp"), CT_OK);
    assert_int_equal(ct_state_dict_set_metadata(sd, "epoch", "3"), CT_OK);
    assert_int_equal(ct_state_dict_set_metadata(sd, "model", "cnn"), CT_OK);
    assert_int_equal(ct_state_dict_metadata_count(sd), 2);
    assert_string_equal(ct_state_dict_metadata(sd, "model"), "cnn");
    assert_string_equal(ct_state_dict_metadata_key_at(sd, 1), "epoch");
    assert_string_equal(ct_state_dict_metadata_value_at(sd, 1), "3");
    assert_null(ct_state_dict_metadata(sd, "missing"));
    assert_int_equal(ct_state_dict_set_metadata(sd, "ctorch.version", "9"), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "key 'ctorch.version' is ctorch's own");
    assert_int_equal(ct_state_dict_set_metadata(sd, "ctorch.device.fc", "cpu"), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "is ctorch's own");
    assert_int_equal(ct_state_dict_set_metadata(sd, "k", "\xff"), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "not valid UTF-8");
    assert_int_equal(ct_state_dict_set_metadata(sd, "k", NULL), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "'value'");
    assert_null(ct_state_dict_metadata_key_at(sd, 2));
    assert_error(CT_ERR_INDEX, "index 2 is out of range");
    ct_state_dict_free(sd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keeps_insertion_order_and_finds_names),
        cmocka_unit_test(holds_one_reference_per_tensor),
        cmocka_unit_test(works_with_scopes),
        cmocka_unit_test(removes_names_and_keeps_the_order_of_the_rest),
        cmocka_unit_test(removes_every_matching_name_at_once),
        cmocka_unit_test(bad_input_is_reported),
        cmocka_unit_test(strips_and_adds_the_module_prefix),
        cmocka_unit_test(a_prefix_clash_renames_nothing),
        cmocka_unit_test(keeps_string_metadata),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

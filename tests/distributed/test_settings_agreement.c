/* ct_dist_agree_on_settings: ranks with the same settings go on; ranks started differently get,
 * every one of them, an error naming each setting that differs and which rank has which value,
 * instead of waiting later in a collective another rank never calls; the group works afterwards.
 * Also the time limit's setting: a bad CTORCH_DIST_TIMEOUT makes ct_dist_init fail naming it, and
 * ct_dist_set_timeout takes only a number of seconds above 0 and at most 1e9 (CTORCH_DIST_TIMEOUT
 * too: 1e19 once overflowed into a hang). Run under mpirun with 2 ranks and 1. */
#include <math.h>

#include "dist_test.h"

static int rank_, world_;

static void a_bad_timeout_in_the_environment_is_named_and_init_fails(void **state)
{
    (void)state;
    setenv("CTORCH_DIST_TIMEOUT", "ten", 1);
    assert_int_equal(ct_dist_init(), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "CTORCH_DIST_TIMEOUT is 'ten'; give the collectives' time limit in "
                 "seconds, a number above 0 and at most 1e+09 (about 31 years; the default is 600)");
    assert_false(ct_dist_is_initialized());
    /* beyond the bound: once a float-to-integer overflow that hung every job */
    const char *refused[] = {"-3", "0", "1e19", "9.3e18", "1000000001", "inf", "nan", "1e400"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        setenv("CTORCH_DIST_TIMEOUT", refused[i], 1);
        assert_int_equal(ct_dist_init(), CT_ERR_INVALID_ARGUMENT);
        char expected[64];
        snprintf(expected, sizeof expected, "CTORCH_DIST_TIMEOUT is '%s'", refused[i]);
        assert_error(CT_ERR_INVALID_ARGUMENT, expected);
        assert_false(ct_dist_is_initialized());
    }
    setenv("CTORCH_DIST_TIMEOUT", "42.5", 1);
    assert_true(ct_dist_timeout() == 42.5);
    assert_int_equal(ct_dist_init(), CT_OK);
    assert_true(ct_dist_timeout() == 42.5);
    unsetenv("CTORCH_DIST_TIMEOUT");
    rank_ = ct_dist_rank();
    world_ = ct_dist_world_size();
}

static void the_program_sets_the_timeout_and_bad_values_are_refused(void **state)
{
    (void)state;
    assert_int_equal(ct_dist_set_timeout(0), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_dist_set_timeout: seconds is '0'; give the collectives' time limit");
    assert_int_equal(ct_dist_set_timeout(-1), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "seconds is '-1'");
    assert_int_equal(ct_dist_set_timeout(NAN), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "seconds is 'nan'");
    assert_int_equal(ct_dist_set_timeout(INFINITY), CT_ERR_INVALID_ARGUMENT);
    assert_int_equal(ct_dist_set_timeout(1e19), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "seconds is '1e+19'; give the collectives' time limit in seconds, a "
                 "number above 0 and at most 1e+09");
    assert_int_equal(ct_dist_set_timeout(1e9), CT_OK);
    assert_int_equal(ct_dist_set_timeout(42.5), CT_OK);
    ct_clear_error();
    assert_true(ct_dist_timeout() == 42.5);
    assert_int_equal(ct_dist_set_timeout(120), CT_OK);
    assert_true(ct_dist_timeout() == 120);
    assert_int_equal(ct_dist_barrier(), CT_OK); /* collectives go on under the new limit */
}

static void the_same_settings_agree(void **state)
{
    (void)state;
    const ct_dist_setting settings[] = {{"--epochs", "3"}, {"--batch-size", "32"}, {"the data", "1437 samples"}};
    assert_int_equal(ct_dist_agree_on_settings(settings, 3), CT_OK);
    assert_int_equal(ct_dist_agree_on_settings(NULL, 0), CT_OK);
}

static void a_differing_setting_is_named_with_every_value_on_every_rank(void **state)
{
    (void)state;
    if (world_ < 2) skip();
    char epochs[16], seed[16];
    snprintf(epochs, sizeof epochs, "%d", rank_ == 0 ? 3 : 1);
    snprintf(seed, sizeof seed, "%d", 7 * rank_);
    const ct_dist_setting settings[] = {{"--epochs", epochs}, {"--batch-size", "32"}, {"--seed", seed}};
    assert_int_equal(ct_dist_agree_on_settings(settings, 3), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "ct_dist_agree_on_settings: --epochs differs between the ranks: rank 0 "
                 "has '3', rank 1 has '1'; --seed differs between the ranks: rank 0 has '0', rank 1 has '7'; start "
                 "every rank with the same settings");
    /* The group works afterwards. */
    int64_t shape[1] = {3};
    ct_tensor *t = ct_ones(shape, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_dist_all_reduce(t, CT_REDUCE_SUM), CT_OK);
    double *got = dist_test_read(t);
    assert_true(got[0] == world_);
    free(got);
    ct_release(t);
}

static void a_different_number_of_settings_is_named(void **state)
{
    (void)state;
    if (world_ < 2) skip();
    const ct_dist_setting settings[] = {{"--epochs", "3"}, {"--seed", "0"}};
    assert_int_equal(ct_dist_agree_on_settings(settings, 1 + rank_), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, rank_ == 0 ? "this rank (0) gave 1 settings, rank 1 gave 2"
                                                     : "this rank (1) gave 2 settings, rank 0 gave 1");
}

static void bad_arguments_on_one_rank_fail_every_rank(void **state)
{
    (void)state;
    const ct_dist_setting settings[] = {{"--epochs", rank_ == world_ - 1 ? NULL : "3"}};
    ct_status status = ct_dist_agree_on_settings(settings, 1);
    if (rank_ == world_ - 1) {
        assert_int_equal(status, CT_ERR_NULL_ARGUMENT);
        assert_error(CT_ERR_NULL_ARGUMENT, "ct_dist_agree_on_settings: settings[0] has a NULL value");
    } else {
        assert_int_equal(status, CT_ERR_NULL_ARGUMENT);
        assert_error(CT_ERR_NULL_ARGUMENT, "could not take part: ct_dist_agree_on_settings: settings[0] has a NULL value");
    }
    assert_int_equal(ct_dist_agree_on_settings(settings, CT_DIST_SETTINGS_MAX + 1), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "count is 65; give 0 to 64 settings");
}

static void many_ranks_with_one_value_are_listed_together(void **state)
{
    (void)state;
    /* Every rank has the same value but rank 0: with 2 ranks, "rank 1 has"; the listing's form. */
    if (world_ < 2) skip();
    const ct_dist_setting settings[] = {{"the number of training samples (--data)", rank_ == 0 ? "1437" : "480"}};
    assert_int_equal(ct_dist_agree_on_settings(settings, 1), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "the number of training samples (--data) differs between the ranks: "
                 "rank 0 has '1437', rank 1 has '480'");
}

static void leaving(void **state)
{
    (void)state;
    assert_int_equal(ct_dist_finalize(), CT_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_bad_timeout_in_the_environment_is_named_and_init_fails),
        cmocka_unit_test(the_program_sets_the_timeout_and_bad_values_are_refused),
        cmocka_unit_test(the_same_settings_agree),
        cmocka_unit_test(a_differing_setting_is_named_with_every_value_on_every_rank),
        cmocka_unit_test(a_different_number_of_settings_is_named),
        cmocka_unit_test(bad_arguments_on_one_rank_fail_every_rank),
        cmocka_unit_test(many_ranks_with_one_value_are_listed_together),
        cmocka_unit_test(leaving),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

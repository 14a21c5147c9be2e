/* What every test program includes: cmocka and ctorch, and checks of recorded errors. */
#ifndef CT_TEST_COMMON_H
#define CT_TEST_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctorch.h"

/* The last error has this status and its message contains `part`; then clears it. */
#define assert_error(status, part)                                                               \
    do {                                                                                         \
        assert_int_equal(ct_last_error(), (status));                                             \
        if (!strstr(ct_last_error_message(), (part)))                                            \
            fail_msg("message '%s' lacks '%s'", ct_last_error_message(), (part));               \
        ct_clear_error();                                                                        \
    } while (0)

#endif

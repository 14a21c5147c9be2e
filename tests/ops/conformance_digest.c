/* The CPU's result of every case of the conformance table (backend_conformance/), one line each:
 * dtype, shape and a digest of the bits. Results must not depend on the compiler or on the
 * instruction set the library was built for, so two builds of ctorch must print the same text;
 * scripts/check-isa-independence compares a baseline x86-64 build with a -march=native one.
 *
 *   ops_conformance_digest [--values] [ct_name ...]
 *
 * --values adds a line with every element after each case's line (%a for floats); names choose
 * entries of the table ("ct_var ct_std"), all of them by default. */
#include <stdio.h>
#include <string.h>

#include "ctorch.h"
#include "ops/backend_conformance/conformance.h"

int main(int argc, char **argv)
{
    bool values = false;
    const char *names[256];
    int name_count = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--values") == 0) {
            values = true;
        } else if (strncmp(argv[i], "ct_", 3) == 0 && name_count < 256) {
            if (!conf_find_op(argv[i])) {
                fprintf(stderr, "ops_conformance_digest: no entry '%s' in the conformance table\n", argv[i]);
                return 2;
            }
            names[name_count++] = argv[i];
        } else {
            fprintf(stderr, "usage: ops_conformance_digest [--values] [ct_name ...]\n");
            return 2;
        }
    }
    long cases = conf_digest(stdout, names, name_count, values);
    return cases > 0 ? 0 : 1;
}

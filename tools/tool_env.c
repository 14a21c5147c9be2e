/* OpenMP threads that spin while they wait for work (libgomp's default) take the cores from
 * each other on a busy machine: `ctorch train` on 2 shared cores ran 10-20x slower than with
 * OMP_WAIT_POLICY=passive. libgomp reads the variable once, when it is loaded, before main runs,
 * so setting it here takes a fresh start of the program: the same program, arguments and
 * environment, plus the variable. */
#include <stdlib.h>
#include <unistd.h>

#include "tool.h"

void ct_tool_prefer_passive_waiting(char **argv)
{
    if (getenv("OMP_WAIT_POLICY")) return; /* the user's choice stands */
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    execv("/proc/self/exe", argv);
    /* Only reached when the program cannot be started again: go on, with spinning threads. */
}

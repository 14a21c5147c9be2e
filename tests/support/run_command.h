/* Running a program from a test through the shell, as `ctorch info` or this test with --child. */
#ifndef CT_TEST_RUN_COMMAND_H
#define CT_TEST_RUN_COMMAND_H

/* Runs a shell command line (redirections are the caller's: "2>&1" joins stderr); returns its
 * whole stdout (malloc'ed, for the caller to free), and its exit status in *exit_status (-1
 * when it did not exit). Fails the test when the command cannot be started. */
char *ct_test_run_command(const char *command, int *exit_status);

#endif

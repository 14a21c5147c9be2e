/* A misspelt option names the one meant ("did you mean --lr-schedule?"), as git and argparse do,
 * rather than listing every option. */
#ifndef CT_OPTION_SUGGEST_H
#define CT_OPTION_SUGGEST_H

/* The option of options (NULL-terminated) that arg (without any "=value") most likely meant: one
 * a letter or two away (a typo, a swap, a letter missing or extra: at most a third of its
 * length), or the only option that arg begins ("--batch" for --batch-size). NULL when none is
 * near enough to suggest. */
const char *ct_option_nearest(const char *arg, const char *const options[]);

/* Prints "ctorch <command>: unknown option 'arg'<context>; did you mean --x?" when one is near,
 * else "...; the options are --a, --b, ... (<help>)", to stderr. context may be "" (" for
 * --model gpt"). */
void ct_option_unknown(const char *command, const char *context, const char *arg, const char *const options[],
                       const char *help);

#endif

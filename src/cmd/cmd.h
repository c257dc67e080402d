/* The subcommands. Each takes argc/argv after the command name and returns
 * the process exit status. */
#ifndef PYSTROBE_CMD_H
#define PYSTROBE_CMD_H

#include "cmd/options.h"

int cmd_dump(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_group(int argc, char **argv);

/* Their options (cmd/options.h): what they parse and --help prints. */
extern const struct opt_table dump_options;
extern const struct opt_table record_options;
extern const struct opt_table top_options;
extern const struct opt_table diff_options;
extern const struct opt_table merge_options;
extern const struct opt_table convert_options;
extern const struct opt_table watch_options;
extern const struct opt_table group_options;

#endif

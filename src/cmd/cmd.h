/* The subcommands. Each takes argc/argv after the command name and returns
 * the process exit status. */
#ifndef PYSTROBE_CMD_H
#define PYSTROBE_CMD_H

int cmd_dump(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_watch(int argc, char **argv);

#endif

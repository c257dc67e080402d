/* A stall report of `watch`: the directory DIR/stall-UNIX-PID with what was
 * detected (report.txt, report.json), every process's dump (dump.txt,
 * dump.json) and the flight recording.  pystrobe-watch(1), THE REPORT,
 * is its reference. */
#ifndef PYSTROBE_WATCH_REPORT_H
#define PYSTROBE_WATCH_REPORT_H

#include <stdint.h>
#include <sys/types.h>

#include "profile/flightrec.h"
#include "analysis/stall.h"

#define WATCH_FLIGHT_FILE "flight.pstrobe"

struct watch_report {
	const char *dir;		/* --report-dir */
	const pid_t *roots;		/* the processes watched, and their trees */
	int nroots;
	const char *progress;		/* --progress, or NULL */
	uint64_t threshold_ns;
	/* What mono_ns() and the wall clock read at one moment, to give the
	 * model's times as dates. */
	uint64_t mono_base_ns, unix_base_ns;
};

/* Write the report of the stall m->r says, now.  Returns the directory's
 * path (new), or NULL after a line on stderr. */
char *watch_report_write(const struct watch_report *w, const struct stall_model *m,
			 const struct flightrec *fr, uint64_t now_ns);

/* SIGUSR1: the flight recording alone, into DIR/flight-UNIX-PID/.  Returns
 * the file's path (new), or NULL after a line on stderr. */
char *watch_flight_write(const struct watch_report *w, const struct flightrec *fr);

/* A new directory DIR/PREFIX-UNIX-WHO (-N after it when taken).  NULL
 * after a line on stderr. */
char *watch_report_mkdir(const char *dir, const char *prefix, const char *who,
			 uint64_t unix_ns);
/* DIR/NAME, whole or not at all (a reader that sees the name sees all of
 * it).  0, or -errno after a line on stderr. */
struct strbuf;
int watch_report_file(const char *dir, const char *name, const struct strbuf *sb);

/* "rank": N, or null for -1. */
struct json;
void watch_json_rank(struct json *j, int rank);

#endif

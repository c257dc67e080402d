/* A symbolizer whose files the helper parses (a foreign root's:
 * symhelper.h), and when the helper is lost, names from the maps alone.
 */
#include "native/symbolize_int.h"
#include "native/symhelper.h"
#include "process/proc.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

/* --- through the helper ------------------------------------------------ */

/* The path of an answer, kept as long as the symbolizer: results point
 * into it. */
static const char *remote_path(struct symbolizer *s, char *path)
{
	for (size_t i = 0; i < s->nrpaths; i++) {
		if (!strcmp(s->rpaths[i], path)) {
			free(path);
			return s->rpaths[i];
		}
	}
	ALLOC_GROW(s->rpaths, s->nrpaths + 1, s->rpaths_alloc);
	s->rpaths[s->nrpaths++] = path;
	return path;
}

static void set_object(struct symbolizer *s, struct native_sym *ns, char *path)
{
	const char *slash;

	ns->path = remote_path(s, path);
	slash = strrchr(ns->path, '/');
	ns->library = slash ? slash + 1 : ns->path;
}

/* One error, counted and said once: from now on lib+0xOFFSET. */
static void helper_lost(struct symbolizer *s, const char *why)
{
	errorf("symbolization helper lost (%s): native frames are named "
	       "library+0xOFFSET from now on", why);
	s->helper_errors++;
	symhelper_stop(s->helper);
	s->helper = NULL;
}

/* Without the helper: the object from the maps, no file parsed, the
 * offset from its first mapping (the link-time address for shared
 * objects and PIEs, which start at 0). */
static void resolve_by_maps(struct symbolizer *s, struct native_sym *ns, bool exact)
{
	uint64_t addr = exact ? ns->pc : ns->pc - 1;
	const struct proc_maps *pm = &s->rmaps;

	if (!s->rmaps_read)
		s->rmaps_read = proc_maps_read(s->pid, &s->rmaps) == 0;
	for (size_t i = 0; i < pm->n; i++) {
		if (addr < pm->v[i].start || addr >= pm->v[i].end || !is_object(&pm->v[i]))
			continue;
		for (size_t j = i + 1; j-- > 0;) {
			if (strcmp(pm->v[j].path, pm->v[i].path) || pm->v[j].offset != 0)
				continue;
			set_object(s, ns, xstrdup(pm->v[i].path));
			ns->offset = ns->pc - pm->v[j].start;
			return;
		}
	}
}

void resolve_remote(struct symbolizer *s, struct native_sym *ns, bool exact)
{
	struct symhelper_answer a;
	char err[128];

	if (s->helper && symhelper_lookup(s->helper, ns->pc, exact, &a, err, sizeof(err)) < 0)
		helper_lost(s, err);
	if (!s->helper) {
		resolve_by_maps(s, ns, exact);
		return;
	}
	if (a.path)
		set_object(s, ns, a.path);
	ns->offset = a.offset;
	ns->function = a.function;
	ns->file = a.file;
	ns->line = a.file ? a.line : 0;
}

unsigned symbolizer_errors(const struct symbolizer *s)
{
	return s->helper_errors;
}

pid_t symbolizer_helper_pid(const struct symbolizer *s)
{
	return s->helper ? symhelper_pid(s->helper) : 0;
}

void symbolizer_check(struct symbolizer *s)
{
	if (s->helper && !symhelper_alive(s->helper))
		helper_lost(s, "it exited");
}

bool refresh_remote(struct symbolizer *s)
{
	char err[128];
	int rc = 1;

	if (s->helper && (rc = symhelper_refresh(s->helper, err, sizeof(err))) < 0)
		helper_lost(s, err);
	if (!s->helper) {
		proc_maps_free(&s->rmaps);
		s->rmaps_read = false;
		rc = 1;
	}
	if (rc)
		cache_clear(s);
	return rc;
}


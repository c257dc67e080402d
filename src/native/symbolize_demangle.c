/* C++ names, demangled by libstdc++ (symbolize.h). */
#include "native/symbolize.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

/* libstdc++ is present wherever C++ code runs, but pystrobe is C and must
 * not need it to start: it is looked up when the first C++ name appears. */
static cxa_demangle_fn get_demangler(void)
{
	static cxa_demangle_fn fn;
	static bool tried;

	if (!tried) {
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

		tried = true;
		if (h)
			*(void **)&fn = dlsym(h, "__cxa_demangle");
	}
	return fn;
}

char *symbolize_demangle(const char *name)
{
	cxa_demangle_fn fn;
	char *out;
	int status = -1;

	if (strncmp(name, "_Z", 2) != 0)
		return NULL;
	fn = get_demangler();
	if (!fn)
		return NULL;
	out = fn(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}

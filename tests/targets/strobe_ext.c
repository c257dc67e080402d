/* A native library for the `pystrobe dump --native` tests
 * (tests/live/check_native.c builds it at run time for each interpreter).
 *
 * It recurses C -> Python -> C: strobe_descend(n) calls back into Python,
 * which calls strobe_descend(n - 1) again, and at n == 0 it parks in C++
 * (strobe_cxx.cpp) reading a pipe nobody writes.  So the merged stack of
 * the parked thread reads, innermost first:
 *
 *   read (libc), strobe::Deep<int>::park(int), strobe_park,
 *   strobe_descend, py_level, strobe_descend, py_level, ... , main
 *
 * Two ways to build it:
 *   - as the extension module strobe_ext (against the interpreter's
 *     Python.h): strobe_ext.descend(n, callback, fd);
 *   - with -DSTROBE_CTYPES, without Python.h, for interpreters that have
 *     no headers here: strobe_entry(n, callback, fd), called via ctypes.
 *
 * With a negative fd the bottom level spins in C (strobe_spin, -fd
 * thousand rounds, without the GIL) and returns instead of parking: a
 * CPU-bound mixed stack for `record --native` and the benchmarks
 * (native_burn.py).
 *
 * Built with -fvisibility=hidden: strobe_descend and the C++ park exist
 * only in .symtab, so in a stripped copy nothing names them and pystrobe
 * must show strobe_ext.so+0xOFFSET, not the nearest exported symbol.
 */
#ifndef STROBE_CTYPES
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#endif

#define EXPORT __attribute__((visibility("default")))
/* One frame per level, named strobe_descend, whatever the optimiser
 * thinks of it. */
#define LEVEL __attribute__((noinline, noclone))

/* strobe_cxx.cpp */
int strobe_park(int fd);

/* Keeps calls from being turned into jumps (a tail call would leave no
 * frame of ours on the stack). */
static volatile int strobe_sink;

/* Burn CPU in C: the innermost frame of a spinning level. */
static LEVEL int strobe_spin(int thousands)
{
	unsigned x = 1;

	for (long i = 0; i < 1000L * thousands; i++)
		x = x * 1103515245u + 12345u;
	strobe_sink = (int)x;
	return 0;
}

#ifdef STROBE_CTYPES

typedef int (*strobe_cb)(int n);

static LEVEL int strobe_descend(int n, strobe_cb cb, int fd)
{
	int rc;

	/* At the bottom ctypes has released the GIL for us. */
	if (n > 0)
		rc = cb(n - 1);		/* back into Python */
	else if (fd < 0)
		rc = strobe_spin(-fd);
	else
		rc = strobe_park(fd);
	strobe_sink = rc;
	return rc;
}

EXPORT int strobe_entry(int n, strobe_cb cb, int fd)
{
	int rc = strobe_descend(n, cb, fd);

	strobe_sink = rc;
	return rc;
}

#else

static LEVEL PyObject *strobe_descend(int n, PyObject *cb, int fd)
{
	PyObject *res;
	int rc;

	if (n > 0) {
		res = PyObject_CallFunction(cb, "i", n - 1);	/* back into Python */
		strobe_sink = 1;
		return res;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = fd < 0 ? strobe_spin(-fd) : strobe_park(fd);
	Py_END_ALLOW_THREADS
	strobe_sink = rc;
	return PyLong_FromLong(rc);
}

static PyObject *ext_descend(PyObject *self, PyObject *args)
{
	PyObject *cb, *res;
	int n, fd;

	(void)self;
	if (!PyArg_ParseTuple(args, "iOi", &n, &cb, &fd))
		return NULL;
	res = strobe_descend(n, cb, fd);
	strobe_sink = 2;
	return res;
}

static PyMethodDef methods[] = {
	{ "descend", ext_descend, METH_VARARGS, "descend(n, callback, fd)" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "strobe_ext", NULL, -1, methods, NULL, NULL, NULL, NULL,
};

EXPORT PyMODINIT_FUNC PyInit_strobe_ext(void)
{
	return PyModule_Create(&module);
}

#endif

// The C++ end of tests/targets/strobe_ext.c: a function whose name only a
// demangler makes readable.  strobe::Deep<int>::park(int) is
// _ZN6strobe4DeepIiE4parkEi in the symbol table.
//
// Built with -fno-exceptions -fno-rtti and nothing from the C++ library,
// so the shared object links with plain gcc.
#include <errno.h>
#include <unistd.h>

namespace strobe {

template <typename T> struct Deep {
	static int park(T fd);
};

// Read a pipe whose write end stays open and unwritten: block for good.
template <typename T> __attribute__((noinline)) int Deep<T>::park(T fd)
{
	char c;

	for (;;) {
		ssize_t n = read(fd, &c, 1);

		if (n == 0 || (n < 0 && errno != EINTR))
			return -1;
	}
}

template struct Deep<int>;

} // namespace strobe

extern "C" __attribute__((visibility("default"), noinline)) int strobe_park(int fd)
{
	int rc = strobe::Deep<int>::park(fd);

	asm volatile("" ::: "memory");	// not a tail call: keep this frame
	return rc;
}

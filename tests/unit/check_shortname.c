/* Tests for the short labels of C++ and Rust names (src/profile/shortname.c):
 * hand-made names of every construct the parser must know, a corpus of real
 * ones (tests/unit/cxx_names.txt: libtorch, libstdc++, Rust's libstd, an
 * H100 torch job), and hostile input: mutations of the corpus and nesting
 * past every bound. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/shortname.h"
#include "suite.h"
#include "util/util.h"

#define ELL "\xe2\x80\xa6"

static const struct {
	const char *name, *label;
} cases[] = {
	/* The frame issue 25 quotes. */
	{ "c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<"
	  "c10::CompileTimeFunctionPointer<c10::Scalar (at::Tensor const&), &at::(anonymous "
	  "namespace)::wrapper_CPU___local_scalar_dense>, c10::Scalar, c10::guts::typelist::"
	  "typelist<at::Tensor const&> >, c10::Scalar (at::Tensor const&)>::call(c10::"
	  "OperatorKernel*, c10::DispatchKeySet, at::Tensor const&)",
	  "c10::impl::wrap_kernel_functor_unboxed_<" ELL ">::call" },
	{ "qsort", "qsort" },
	{ "libcuda.so.580.159.04+0x460820", "libcuda.so.580.159.04+0x460820" },
	{ "at::native::add(at::Tensor const&, c10::Scalar const&)", "at::native::add" },
	/* Operators: their brackets are names. */
	{ "std::ostream& std::operator<< <std::char_traits<char> >(std::ostream&, char const*)",
	  "std::operator<< <" ELL ">" },
	{ "bool operator<(Foo const&, Foo const&)", "operator<" },
	{ "bool operator><int>(Foo<int> const&, Foo<int> const&)", "operator><" ELL ">" },
	{ "Foo::operator<=>(Foo const&) const", "Foo::operator<=>" },
	{ "Foo::operator>>=(int)", "Foo::operator>>=" },
	{ "Foo::operator->*(int)", "Foo::operator->*" },
	{ "std::unique_ptr<Foo, std::default_delete<Foo> >::operator->() const",
	  "std::unique_ptr<" ELL ">::operator->" },
	{ "std::vector<int, std::allocator<int> >::operator[](unsigned long)",
	  "std::vector<" ELL ">::operator[]" },
	{ "Foo::operator()<int>(int)", "Foo::operator()<" ELL ">" },
	{ "operator new[](unsigned long)", "operator new[]" },
	{ "operator delete(void*, unsigned long)", "operator delete" },
	{ "Foo::operator unsigned long() const", "Foo::operator unsigned long" },
	{ "Foo::operator std::vector<int, std::allocator<int> >() &&",
	  "Foo::operator std::vector<" ELL ">" },
	{ "Foo<&Bar::operator<, &Bar::operator> >::run(int)", "Foo<" ELL ">::run" },
	{ "my_operator<int>(int)", "my_operator<" ELL ">" },
	/* Lambdas and other local entities. */
	{ "foo(int)::{lambda(int)#1}::operator()(int) const", "foo::{lambda#1}::operator()" },
	{ "std::_Function_handler<void (), foo()::{lambda()#1}>::_M_invoke(std::_Any_data const&)",
	  "std::_Function_handler<" ELL ">::_M_invoke" },
	{ "Foo::run()::{unnamed type#1}::get() const", "Foo::run::{unnamed type#1}::get" },
	{ "(anonymous namespace)::bar(int)", "(anonymous namespace)::bar" },
	/* Return types, function pointers, ABI tags, clones, qualifiers. */
	{ "unsigned long foo<int>(int)", "foo<" ELL ">" },
	{ "at::Tensor const& at::native::foo<float>(at::Tensor const&)", "at::native::foo<" ELL ">" },
	{ "void (*signal_handler(int))(int)", "signal_handler" },
	{ "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::"
	  "_M_create[abi:cxx11](unsigned long&, unsigned long)",
	  "std::__cxx11::basic_string<" ELL ">::_M_create" },
	{ "foo(int) [clone .cold]", "foo" },
	{ "foo [clone .isra.0]", "foo" },
	{ "Foo::get() const volatile &&", "Foo::get" },
	{ "Foo::get() noexcept", "Foo::get" },
	{ "non-virtual thunk to at::Foo::bar(int)", "non-virtual thunk to at::Foo::bar" },
	/* Rust: the legacy hash goes, <T as Trait> is the name. */
	{ "core::ptr::drop_in_place<alloc::vec::Vec<u8>>::h0123456789abcdef",
	  "core::ptr::drop_in_place<" ELL ">" },
	{ "<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop::h0123456789abcdef",
	  "<alloc::vec::Vec<" ELL "> as core::ops::drop::Drop>::drop" },
	{ "std::rt::lang_start::{{closure}}::h9a8b7c6d5e4f3a2b", "std::rt::lang_start::{{closure}}" },
	{ "core::ptr::drop_in_place::<alloc::string::String>", "core::ptr::drop_in_place::<" ELL ">" },
	{ "foo::h0123", "foo::h0123" },
	/* What does not parse is the name itself (cut when long). */
	{ "foo<(1)>(2)>(int)", "foo<(1)>(2)>(int)" },
	{ ")))(((", ")))(((" },
	{ "a<<<<", "a<<<<" },
	{ "[vdso]", "[vdso]" },
	{ "typeinfo for at::Tensor (c10::Scalar)", "typeinfo for at::Tensor (c10::Scalar)" },
	{ "", "" },
};

START_TEST(test_cases)
{
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *got = short_name(cases[i].name);

		ck_assert_msg(!strcmp(got, cases[i].label), "%s\n  gave %s\n  want %s",
			      cases[i].name, got, cases[i].label);
		free(got);
	}
}
END_TEST

/* Code points, each byte of broken UTF-8 one. */
static size_t chars(const char *s)
{
	size_t n = 0;

	while (*s) {
		int k = utf8_char(s, NULL);

		s += k > 0 ? k : 1;
		n++;
	}
	return n;
}

static bool ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '~';
}

/* Every word of the label is a word of the name, in the name's order: the
 * label leaves things out, never makes them up. */
static bool words_in_order(const char *label, const char *name)
{
	const char *at = name;

	for (const char *s = label; *s;) {
		size_t n = 0;
		char *w;
		const char *hit;

		while (s[n] && ident(s[n]))
			n++;
		if (!n) {
			s++;
			continue;
		}
		w = xasprintf("%.*s", (int)n, s);
		hit = strstr(at, w);
		free(w);
		if (!hit)
			return false;
		at = hit + n;
		s += n;
	}
	return true;
}

/* The brackets a label keeps: "<…>", "(anonymous namespace)", those of an
 * operator's name, Rust's "<T as Trait>", lambdas' braces.  No parameter
 * list is left. */
static bool no_parameters(const char *label)
{
	const char *s = label;

	while ((s = strchr(s, '('))) {
		if (!strncmp(s, "(anonymous namespace)", 21))
			s += 21;
		else if (s >= label + 8 && !strncmp(s - 8, "operator()", 10))
			s += 2;
		else
			return false;
	}
	return true;
}

static char **read_corpus(size_t *n)
{
	const char *dir = getenv("srcdir");
	char *path = xasprintf("%s/tests/unit/cxx_names.txt", dir && *dir ? dir : ".");
	FILE *f = fopen(path, "r");
	char **names = NULL, *line = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t len;

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	*n = 0;
	while ((len = getline(&line, &cap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (!len || line[0] == '#')
			continue;
		ALLOC_GROW(names, *n + 1, alloc);
		names[(*n)++] = xstrdup(line);
	}
	free(line);
	fclose(f);
	free(path);
	return names;
}

static void free_corpus(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

START_TEST(test_corpus)
{
	size_t n, shorter = 0, longest = 0;
	char **names = read_corpus(&n);

	ck_assert_uint_ge(n, 300);
	for (size_t i = 0; i < n; i++) {
		char *got = short_name(names[i]), *again = short_name(got);

		ck_assert_msg(*got, "%s: empty label", names[i]);
		ck_assert_msg(chars(got) <= SHORT_NAME_MAX, "%s: label %s is %zu long", names[i], got,
			      chars(got));
		ck_assert_msg(words_in_order(got, names[i]), "%s: label %s adds words", names[i],
			      got);
		ck_assert_msg(no_parameters(got), "%s: label %s keeps a parameter list", names[i],
			      got);
		ck_assert_msg(!strcmp(again, got), "%s: %s, then %s", names[i], got, again);
		shorter += strlen(got) < strlen(names[i]);
		if (chars(got) > longest)
			longest = chars(got);
		free(again);
		free(got);
	}
	printf("check_shortname: %zu real names, %zu shortened, the longest label %zu characters\n",
	       n, shorter, longest);
	free_corpus(names, n);
}
END_TEST

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The corpus mutated: brackets, operator words and blanks put in, bytes
 * taken out, names cut short and doubled.  Every label stays within the
 * bound (ASan and UBSan, under --enable-sanitizers, watch the rest). */
START_TEST(test_mutations)
{
	static const char *const bits[] = { "<", ">", "(", ")", "{", "}", "[", "]", " ", "operator",
					    "operator<", "operator()", "(anonymous namespace)", "::",
					    "::h0123456789abcdef", "\xe2\x80", "\xff", "[abi:", " const" };
	size_t n, tried = 0;
	char **names = read_corpus(&n);

	for (int round = 0; round < 60; round++) {
		for (size_t i = 0; i < n; i++) {
			struct strbuf sb = STRBUF_INIT;
			size_t len = strlen(names[i]), at = next_rand() % (len + 1);
			char *got;

			switch (next_rand() % 4) {
			case 0:	/* a piece put in */
				sb_add(&sb, names[i], at);
				sb_puts(&sb, bits[next_rand() % ARRAY_SIZE(bits)]);
				sb_puts(&sb, names[i] + at);
				break;
			case 1:	/* a byte taken out */
				sb_add(&sb, names[i], at);
				if (at < len)
					sb_puts(&sb, names[i] + at + 1);
				break;
			case 2:	/* cut short */
				sb_add(&sb, names[i], at);
				break;
			default: /* doubled, nested in itself */
				sb_add(&sb, names[i], at);
				sb_puts(&sb, names[i]);
				sb_puts(&sb, names[i] + at);
				break;
			}
			got = short_name(sb.buf ? sb.buf : "");
			ck_assert_msg(chars(got) <= SHORT_NAME_MAX, "%s: %s", sb.buf, got);
			free(got);
			sb_release(&sb);
			tried++;
		}
	}
	printf("check_shortname: %zu mutated names, every label within %d characters\n", tried,
	       SHORT_NAME_MAX);
	free_corpus(names, n);
}
END_TEST

static char *repeat(const char *a, const char *b, size_t times)
{
	struct strbuf sb = STRBUF_INIT;

	sb_puts(&sb, "f");
	for (size_t i = 0; i < times; i++)
		sb_puts(&sb, a);
	for (size_t i = 0; b && i < times; i++)
		sb_puts(&sb, b);
	return sb_detach(&sb);
}

/* A name that does not parse, with a run of stray UTF-8 continuation
 * bytes where it is cut (fuzz_shortname's first find: counted one way
 * forward and another back, the tail came out longer than the bound). */
START_TEST(test_broken_utf8_cut)
{
	struct strbuf sb = STRBUF_INIT;
	char *got;

	sb_puts(&sb, "at::native::f(c10::ArrayRef<at::Tensor>, c1");
	for (int i = 0; i < 200; i++)
		sb_putc(&sb, (char)0xa9);
	sb_puts(&sb, "0::Scalar const&)");
	got = short_name(sb.buf);
	ck_assert_msg(chars(got) <= SHORT_NAME_MAX, "%zu characters", chars(got));
	free(got);
	sb_release(&sb);
}
END_TEST

/* Nesting past the parser's depth, names past its length, runs of
 * brackets that never close: each is cut, and none takes long. */
START_TEST(test_hostile)
{
	static const struct {
		const char *open, *close;
		size_t times;
	} shapes[] = {
		{ "<", ">", 30 }, { "<", ">", 100 }, { "<", ">", 100000 }, { "(", ")", 100 },
		{ "{", "}", 100 }, { "<a(b{c[", "]}}>", 40 }, { "<", NULL, 100000 },
		{ "::operator<", NULL, 50000 }, { "{lambda(", ")#1}::", 5000 },
		{ "<(anonymous namespace)::", ">", 70 }, { " ", NULL, 100000 },
		{ "operator ", NULL, 10000 }, { "<x as <y as ", ">>", 60 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(shapes); i++) {
		char *name = repeat(shapes[i].open, shapes[i].close, shapes[i].times);
		char *got = short_name(name);

		ck_assert_msg(chars(got) <= SHORT_NAME_MAX, "shape %zu: %zu characters", i,
			      chars(got));
		ck_assert_msg(*got == 'f', "shape %zu: %s", i, got);
		free(got);
		free(name);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shortname");
	TCase *tc = tcase_create("shortname");

	tcase_add_test(tc, test_cases);
	tcase_add_test(tc, test_corpus);
	tcase_add_test(tc, test_mutations);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_broken_utf8_cut);
	suite_add_tcase(s, tc);
	return run_suite(s);
}

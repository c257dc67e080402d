/* Short labels for C++ and Rust function names.
 *
 * A demangled C++ name carries its template arguments, parameter list and
 * qualifiers; in a torch job one frame's name runs past 400 characters,
 * and a flame graph of such frames shows nothing but their first words.
 * The short label keeps the path of scopes and drops the rest:
 *
 *   c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::...>::call(
 *       c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor const&)
 *   -> c10::impl::wrap_kernel_functor_unboxed_<…>::call
 *
 * Names come from the target's ELF files, demangled: they may be anything.
 * The parser is bounded (input length, nesting depth) and falls back to
 * the name itself, cut, when the name does not parse.
 */
#ifndef PYSTROBE_SHORTNAME_H
#define PYSTROBE_SHORTNAME_H

/* The most characters (code points) of a short label; longer ones are cut
 * in the middle, with "…". */
#define SHORT_NAME_MAX 120

/* The short label of a function name, a new string: template arguments
 * become "<…>"; parameter lists, cv and ref qualifiers, ABI tags
 * ([abi:cxx11]), clone suffixes ([clone .cold]), a template function's
 * return type and a Rust legacy hash (::h0123456789abcdef) go.  Operator
 * names (operator<<, operator(), operator->), "(anonymous namespace)",
 * lambdas ({lambda#1}) and Rust's <T as Trait> keep their meaning. */
char *short_name(const char *name);

#endif

/* The seeds of fuzz_elffile (make elf-seeds): a small object with a
 * symbol table, DWARF, a build id and unwind tables, built with -g. */
int _PyRuntime[4] __attribute__((section(".PyRuntime"))) = { 1, 2, 3, 4 };

static int seed_static(int x)
{
	return x * 3 + _PyRuntime[x & 3];
}

int seed_exported(int x)
{
	return seed_static(x) + 1;
}

int main(int argc, char **argv)
{
	(void)argv;
	return seed_exported(argc);
}

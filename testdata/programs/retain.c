/* retain: allocates N MiB in small blocks, frees two of every three
 * (the survivors keep most pages partly used, so the allocator retains
 * them), prints "ready" and waits until stdin closes. Linked with, or
 * preloaded with, the allocator under test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	size_t size = 512, n = (mib << 20) / size;
	char **blocks = malloc(n * sizeof *blocks);
	if (!blocks)
		return 1;
	for (size_t i = 0; i < n; i++) {
		blocks[i] = malloc(size);
		if (!blocks[i])
			return 1;
		memset(blocks[i], 1, size);
	}
	for (size_t i = 0; i < n; i++)
		if (i % 3 != 0) {
			free(blocks[i]);
			blocks[i] = NULL;
		}
	printf("ready\n");
	fflush(stdout);
	while (getchar() != EOF)
		;
	return 0;
}

/* burst MIB COUNT MS: COUNT times, allocates MIB MiB, touches every page and
 * frees it again, MS milliseconds apart: short allocation bursts that need
 * free pages at once while a reader keeps the page cache full. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: burst MIB COUNT MS\n");
		return 2;
	}
	size_t len = (size_t)atol(argv[1]) << 20;
	long count = atol(argv[2]), ms = atol(argv[3]);
	for (long i = 0; i < count; i++) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		memset(p, 1, len);
		munmap(p, len);
		usleep(ms * 1000);
	}
	return 0;
}

/* rawread: the raw cost of the reads a memdoctor command makes, as a
 * yardstick for bench/check.sh. It replays a list written by
 * bench/rawread/plan.py from an strace of one run: every file opened
 * once, read once through one reusable buffer, nothing parsed.
 *
 * Input lines (tab-separated), in the order of the first open:
 *   S <0> <bytes> <path>   open, read up to <bytes> (or to the end) from 0
 *   D <0> <0>     <path>   open a directory, list it to the end
 *   P <off> <len> <path>   on the file opened last: pread <len> at <off>
 * A file that cannot be opened (a process that exited since the trace)
 * is skipped and counted: it prints the files it read and those it
 * skipped ("read N skipped M"), so that a yardstick replaying processes
 * gone since is seen to be cheaper than the run it stands for.
 * usage: rawread PLAN
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static char buf[1 << 20];

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: rawread PLAN\n");
		return 2;
	}
	FILE *plan = fopen(argv[1], "r");
	if (!plan) {
		perror(argv[1]);
		return 1;
	}
	static char line[8192];
	int fd = -1;
	long files = 0, skipped = 0;
	while (fgets(line, sizeof line, plan)) {
		char kind;
		long long off, len;
		int n = 0;
		if (sscanf(line, "%c\t%lld\t%lld\t%n", &kind, &off, &len, &n) < 3 || n == 0)
			continue;
		char *path = line + n;
		path[strcspn(path, "\n")] = 0;
		if (kind == 'P') {
			while (fd >= 0 && len > 0) {
				size_t want = len < (long long)sizeof buf ? (size_t)len : sizeof buf;
				ssize_t r = pread(fd, buf, want, off);
				if (r <= 0)
					break;
				off += r;
				len -= r;
			}
			continue;
		}
		if (fd >= 0)
			close(fd);
		fd = open(path, O_RDONLY | O_CLOEXEC | (kind == 'D' ? O_DIRECTORY : 0));
		if (fd < 0) {
			skipped++;
			continue;
		}
		files++;
		if (kind == 'D') {
			while (syscall(SYS_getdents64, fd, buf, sizeof buf) > 0)
				;
			continue;
		}
		long long left = len;
		do {
			size_t want = left > 0 && left < (long long)sizeof buf ? (size_t)left : sizeof buf;
			ssize_t r = read(fd, buf, want);
			if (r <= 0)
				break;
			left -= r;
		} while (left > 0);
	}
	if (fd >= 0)
		close(fd);
	printf("read %ld skipped %ld\n", files, skipped);
	return 0;
}

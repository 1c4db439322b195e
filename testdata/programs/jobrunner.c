// jobrunner: runs each job in a memory cgroup of its own and then removes
// the cgroup, as CI runners and batch schedulers do (incident 1 in
// miniature).
//
// usage: jobrunner PARENT DATADIR RATE COUNT KIB
// COUNT times, RATE jobs a second (0: as fast as it can): mkdir
// PARENT/<name>-<i>; a child joins that cgroup and writes KIB KiB to
// DATADIR/<name>-<i> (page cache that stays charged to the cgroup); rmdir.
// <name> is the program's own name, so two copies under different names are
// told apart.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what, const char *path) {
	fprintf(stderr, "jobrunner: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void writefile(const char *path, const char *data, size_t n) {
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("open", path);
	while (n > 0) {
		ssize_t w = write(fd, data, n);
		if (w <= 0)
			die("write", path);
		data += w;
		n -= (size_t)w;
	}
	close(fd);
}

static double since(const struct timespec *start) {
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

int main(int argc, char **argv) {
	if (argc != 6) {
		fprintf(stderr, "usage: jobrunner PARENT DATADIR RATE COUNT KIB\n");
		return 2;
	}
	const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	double rate = atof(argv[3]);
	long count = atol(argv[4]), kib = atol(argv[5]);
	size_t size = (size_t)kib * 1024;
	char *buf = malloc(size + 1);
	if (!buf)
		return 1;
	memset(buf, 'x', size);
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (long i = 0; i < count; i++) {
		char cg[2048], file[2048], procs[2100], pid[32];
		snprintf(cg, sizeof cg, "%s/%s-%ld", argv[1], name, i);
		snprintf(file, sizeof file, "%s/%s-%ld", argv[2], name, i);
		if (mkdir(cg, 0755) != 0)
			die("mkdir", cg);
		if (kib > 0) {
			pid_t c = fork();
			if (c == 0) {
				snprintf(procs, sizeof procs, "%s/cgroup.procs", cg);
				snprintf(pid, sizeof pid, "%d", getpid());
				writefile(procs, pid, strlen(pid));
				writefile(file, buf, size);
				_exit(0);
			}
			int st;
			if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
				return 1;
		}
		// The child's exit may not have left the cgroup yet.
		while (rmdir(cg) != 0) {
			if (errno != EBUSY)
				die("rmdir", cg);
			usleep(1000);
		}
		if (rate > 0) {
			double due = (double)(i + 1) / rate, el = since(&start);
			if (due > el)
				usleep((useconds_t)((due - el) * 1e6));
		}
	}
	printf("%ld jobs in %.3f s\n", count, since(&start));
	return 0;
}

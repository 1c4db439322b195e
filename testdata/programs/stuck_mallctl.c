/* stuck_mallctl: a stand-in for jemalloc, built as libjemalloc.so.2 and
 * preloaded, whose malloc is glibc's and whose mallctl waits for ever on a
 * mutex another thread holds: what memdoctor meets in a deadlocked
 * allocator, or in a target whose own mallctl never returns. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

void *malloc(size_t n) { return __libc_malloc(n); }
void free(void *p) { __libc_free(p); }
void *calloc(size_t a, size_t b) { return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }

static pthread_mutex_t never = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t started = PTHREAD_MUTEX_INITIALIZER;

static void *holder(void *arg) {
	(void)arg;
	pthread_mutex_lock(&never);
	pthread_mutex_unlock(&started);
	for (;;)
		pause();
	return NULL;
}

__attribute__((constructor)) static void init(void) {
	pthread_t t;
	pthread_mutex_lock(&started);
	pthread_create(&t, NULL, holder, NULL);
	pthread_mutex_lock(&started); /* the holder has the mutex */
}

int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
	(void)name, (void)oldp, (void)oldlenp, (void)newp, (void)newlen;
	pthread_mutex_lock(&never);
	return 0;
}

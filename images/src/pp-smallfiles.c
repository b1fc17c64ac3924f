/*
 * pp-smallfiles: the small-file benchmark of seed 003 ("creates 250000 1KB files, then
 * randomly open, stat and read them").
 *
 *   pp-smallfiles DIR COUNT [SIZE=1024] [SEED=1]
 *
 * Creates COUNT files of SIZE bytes under DIR, 1000 per subdirectory, then times five
 * phases and prints one line per phase in the seed's format:
 *
 *   #1 sequential create: create, write and close each file, in index order
 *   #2 random open:       open and close each file once, in a shuffled order
 *   #3 random stat:       stat each file once, in a new shuffled order
 *   #4 random read:       open, read the whole file, close; check its size and first bytes
 *   #5 sequential delete: unlink each file, in index order
 *
 * The subdirectories are made before #1 and removed after #5, outside the timed phases, so
 * every phase counts file operations only. Nothing is fsynced: barriers act here only
 * through the filesystem's own journal commits. File contents and the shuffles come from
 * SEED alone, so two runs with the same arguments do the same work.
 *
 * With PP_STAT set to a disk's /sys/block/DEV/stat, its line is printed before phase #1 and
 * after each phase ("pp-stat N FIELDS", N = the phases done), so each phase's writes and
 * flushes are the difference of two lines.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FILES_PER_DIR 1000
#define CHECKED_BYTES 64

static const char *root;
static unsigned long count;
static size_t size;
static uint64_t seed;

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("pp-smallfiles: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void usage(void)
{
	fputs("usage: pp-smallfiles DIR COUNT [SIZE=1024] [SEED=1]\n", stderr);
	exit(2);
}

static unsigned long long number(const char *arg, const char *what, unsigned long long max)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || n > max) {
		fprintf(stderr, "pp-smallfiles: bad %s: %s\n", what, arg);
		usage();
	}
	return n;
}

/* splitmix64: turns any seed, including 0, into a well-mixed 64-bit value. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* xorshift64*; the state must never be 0. */
static uint64_t next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static uint64_t stream(uint64_t a, uint64_t b)
{
	uint64_t s = mix(a ^ mix(b));

	return s ? s : 1;
}

/* The content of file `id`: a pure function of (seed, id). */
static void fill(unsigned char *buf, size_t len, unsigned long id)
{
	uint64_t state = stream(seed, id);
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t r = next(&state);
		size_t n = len - i < 8 ? len - i : 8;

		memcpy(buf + i, &r, n);
	}
}

static void dir_path(char *out, size_t len, unsigned long d)
{
	if ((size_t)snprintf(out, len, "%s/d%05lu", root, d) >= len)
		die("path too long under %s", root);
}

static void file_path(char *out, size_t len, unsigned long id)
{
	if ((size_t)snprintf(out, len, "%s/d%05lu/f%07lu", root, id / FILES_PER_DIR, id) >= len)
		die("path too long under %s", root);
}

static double now(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		die("clock_gettime: %s", strerror(errno));
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void disk_stat(int done)
{
	const char *path = getenv("PP_STAT");
	char line[512];
	FILE *f;

	if (!path || !*path)
		return;
	f = fopen(path, "r");
	if (!f)
		die("open %s: %s", path, strerror(errno));
	if (!fgets(line, sizeof(line), f))
		die("read %s: %s", path, ferror(f) ? strerror(errno) : "empty");
	fclose(f);
	printf("pp-stat %d %s%s", done, line, strchr(line, '\n') ? "" : "\n");
	fflush(stdout);
}

static void report(int number, const char *name, double seconds)
{
	printf("#%d %-22s: %.3f seconds (%.2f op/s).\n", number, name, seconds,
	       seconds > 0 ? count / seconds : 0.0);
	fflush(stdout);
	disk_stat(number);
}

/* A Fisher-Yates shuffle of 0..count-1, drawn from the run's own stream. */
static void shuffle(unsigned long *order, uint64_t *state)
{
	unsigned long i;

	for (i = 0; i < count; i++)
		order[i] = i;
	for (i = count - 1; i > 0; i--) {
		unsigned long j = next(state) % (i + 1);
		unsigned long t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
}

static void write_all(int fd, const unsigned char *buf, size_t len, const char *path)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("write %s: %s", path, strerror(errno));
		}
		buf += n;
		len -= n;
	}
}

static void create_files(unsigned char *buf)
{
	char path[PATH_MAX];
	unsigned long id;

	for (id = 0; id < count; id++) {
		int fd;

		file_path(path, sizeof(path), id);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			die("create %s: %s", path, strerror(errno));
		fill(buf, size, id);
		write_all(fd, buf, size, path);
		if (close(fd))
			die("close %s: %s", path, strerror(errno));
	}
}

static void open_files(const unsigned long *order)
{
	char path[PATH_MAX];
	unsigned long i;

	for (i = 0; i < count; i++) {
		int fd;

		file_path(path, sizeof(path), order[i]);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			die("open %s: %s", path, strerror(errno));
		if (close(fd))
			die("close %s: %s", path, strerror(errno));
	}
}

static void stat_files(const unsigned long *order)
{
	char path[PATH_MAX];
	struct stat st;
	unsigned long i;

	for (i = 0; i < count; i++) {
		file_path(path, sizeof(path), order[i]);
		if (stat(path, &st))
			die("stat %s: %s", path, strerror(errno));
	}
}

/* Reads until EOF into a buffer one byte larger than SIZE, so a longer file is caught. */
static void read_files(const unsigned long *order, unsigned char *buf)
{
	unsigned char expected[CHECKED_BYTES];
	size_t checked = size < CHECKED_BYTES ? size : CHECKED_BYTES;
	char path[PATH_MAX];
	unsigned long i;

	for (i = 0; i < count; i++) {
		size_t got = 0;
		ssize_t n;
		int fd;

		file_path(path, sizeof(path), order[i]);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			die("open %s: %s", path, strerror(errno));
		while (got <= size && (n = read(fd, buf + got, size + 1 - got)) != 0) {
			if (n < 0) {
				if (errno == EINTR)
					continue;
				die("read %s: %s", path, strerror(errno));
			}
			got += n;
		}
		if (close(fd))
			die("close %s: %s", path, strerror(errno));
		if (got != size)
			die("%s: read %zu bytes, expected %zu", path, got, size);
		fill(expected, checked, order[i]);
		if (memcmp(buf, expected, checked))
			die("%s: content differs from what was written", path);
	}
}

static void delete_files(void)
{
	char path[PATH_MAX];
	unsigned long id;

	for (id = 0; id < count; id++) {
		file_path(path, sizeof(path), id);
		if (unlink(path))
			die("unlink %s: %s", path, strerror(errno));
	}
}

static unsigned long dirs(void)
{
	return (count + FILES_PER_DIR - 1) / FILES_PER_DIR;
}

static void make_dirs(void)
{
	char path[PATH_MAX];
	unsigned long d;

	if (mkdir(root, 0755) && errno != EEXIST)
		die("mkdir %s: %s", root, strerror(errno));
	for (d = 0; d < dirs(); d++) {
		dir_path(path, sizeof(path), d);
		if (mkdir(path, 0755))
			die("mkdir %s: %s", path, strerror(errno));
	}
}

static void remove_dirs(void)
{
	char path[PATH_MAX];
	unsigned long d;

	for (d = 0; d < dirs(); d++) {
		dir_path(path, sizeof(path), d);
		if (rmdir(path))
			die("rmdir %s: %s", path, strerror(errno));
	}
}

int main(int argc, char **argv)
{
	unsigned long *order;
	unsigned char *buf;
	uint64_t state;
	double start;

	if (argc < 3 || argc > 5)
		usage();
	root = argv[1];
	count = number(argv[2], "COUNT", 100000000UL);
	size = argc > 3 ? number(argv[3], "SIZE", 1UL << 30) : 1024;
	seed = argc > 4 ? number(argv[4], "SEED", UINT64_MAX) : 1;
	if (count == 0) {
		fputs("pp-smallfiles: COUNT must be at least 1\n", stderr);
		usage();
	}

	order = malloc(count * sizeof(*order));
	buf = malloc(size + 1);
	if (!order || !buf)
		die("out of memory for %lu files of %zu bytes", count, size);
	state = stream(seed, UINT64_MAX);

	make_dirs();
	printf("... testing %lu files ...\n", count);
	fflush(stdout);
	disk_stat(0);

	start = now();
	create_files(buf);
	report(1, "sequential create", now() - start);

	shuffle(order, &state);
	start = now();
	open_files(order);
	report(2, "random open", now() - start);

	shuffle(order, &state);
	start = now();
	stat_files(order);
	report(3, "random stat", now() - start);

	shuffle(order, &state);
	start = now();
	read_files(order, buf);
	report(4, "random read", now() - start);

	start = now();
	delete_files();
	report(5, "sequential delete", now() - start);

	remove_dirs();
	free(order);
	free(buf);
	return 0;
}

/*
 * pp-io: file operations that tell the host what the application was told. Every failed
 * system call writes "error ID SYSCALL ERRNO" to fd 4 (the ack port), and a read-back that
 * differs from what was written, without an error, writes "wrong ID PATH OFFSET".
 *
 *   pp-io write ID PATH LINE SIZE    open (create; no truncation), write LINE\n repeated to
 *                                    SIZE bytes over the start of the file, close
 *   pp-io fsync ID PATH              open, fsync, close (a directory too)
 *   pp-io read ID PATH LINE SIZE     read SIZE bytes, compare with LINE\n repeated
 *   pp-io dread ID PATH LINE SIZE    the same through O_DIRECT: the device's bytes, never the
 *                                    page cache's
 *
 * Exit status 0 if every call succeeded (and a read matched), 1 otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *op_id;

static int told(const char *syscall)
{
    dprintf(4, "error %s %s %d\n", op_id, syscall, errno);
    return 1;
}

static char *pattern(const char *line, size_t size)
{
    size_t unit = strlen(line) + 1;
    char *buf = malloc(size + 1);
    if (!buf)
        exit(2);
    for (size_t at = 0; at < size; at++)
        buf[at] = (at % unit == unit - 1) ? '\n' : line[at % unit];
    return buf;
}

static int do_write(const char *path, const char *line, size_t size)
{
    char *buf = pattern(line, size);
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    if (fd < 0)
        return told("open");
    int bad = 0;
    for (size_t done = 0; done < size;) {
        ssize_t n = write(fd, buf + done, size - done);
        if (n < 0) {
            bad = told("write");
            break;
        }
        done += n;
    }
    if (close(fd) < 0)
        bad = told("close");
    free(buf);
    return bad;
}

static int do_fsync(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return told("open");
    int bad = fsync(fd) < 0 ? told("fsync") : 0;
    if (close(fd) < 0)
        bad = told("close");
    return bad;
}

static int do_read(const char *path, const char *line, size_t size, int flags)
{
    char *want = pattern(line, size), *got = NULL;
    if (posix_memalign((void **)&got, 4096, size + 4096))
        exit(2);
    int fd = open(path, O_RDONLY | flags);
    if (fd < 0)
        return told("open");
    size_t done = 0;
    int bad = 0;
    while (done < size) {
        ssize_t n = read(fd, got + done, size - done);
        if (n < 0) {
            bad = told("read");
            break;
        }
        if (n == 0)
            break;
        done += n;
    }
    close(fd);
    if (!bad) {
        size_t at = 0;
        while (at < done && got[at] == want[at])
            at++;
        if (at < size) {
            dprintf(4, "wrong %s %s %zu\n", op_id, path, at);
            bad = 1;
        }
    }
    free(want);
    free(got);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: pp-io write|fsync|read|dread ID PATH [LINE SIZE]\n");
        return 2;
    }
    op_id = argv[2];
    if (!strcmp(argv[1], "fsync"))
        return do_fsync(argv[3]);
    if (argc != 6) {
        fprintf(stderr, "pp-io %s needs LINE and SIZE\n", argv[1]);
        return 2;
    }
    size_t size = strtoul(argv[5], NULL, 10);
    if (!strcmp(argv[1], "write"))
        return do_write(argv[3], argv[4], size);
    if (!strcmp(argv[1], "read"))
        return do_read(argv[3], argv[4], size, 0);
    if (!strcmp(argv[1], "dread"))
        return do_read(argv[3], argv[4], size, O_DIRECT);
    fprintf(stderr, "pp-io: unknown operation %s\n", argv[1]);
    return 2;
}

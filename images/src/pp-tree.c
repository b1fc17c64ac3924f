/*
 * pp-tree: what a generated workload's oracle reads of a recovered work directory, in one
 * process (under TCG every process costs the guest about 12 ms, and a shell loop over the
 * names with stat, readlink, sha256sum and pp-xattr costs dozens of them).
 *
 * Run in the work directory. Walks it (symlinks are not followed) and prints, for each name
 * below it, in the order readdir gives them:
 *
 *   entry PATH MODE SIZE NLINK INO SUM TARGET
 *       MODE in hex (st_mode); SUM the sha256 of a regular file's content, else "-";
 *       TARGET a symlink's target, else "-"
 *   xattr PATH NAME VALUE
 *       each user.* extended attribute of PATH, after its entry line
 *   extent PATH LOGICAL LENGTH FLAGS
 *       each extent of a regular file (FS_IOC_FIEMAP, FIEMAP_FLAG_SYNC not set: the recovered
 *       mount has nothing to write), blocks past its size too; LOGICAL and LENGTH in bytes, FLAGS
 *       the extent's fe_flags in hex (0x800: unwritten, preallocated); after its xattr lines.
 *       A filesystem without fiemap prints none
 *
 * Exit status 0; 1 if a name could not be read (the error on stderr, the walk goes on).
 *
 * pp-tree -C DIR --after ROOT: walks DIR, then takes the step after recovery (a checker's, in
 * the mount that replayed the log: a later mount would hide a wrong replay, as of the highest
 * inode number in use): a new file `pp-new` at ROOT and in DIR and each directory below it (a
 * directory of another filesystem, a btrfs subvolume, gets one but is not entered), each written,
 * then a new directory ROOT/pp-new-dir, then each of them fsynced. Prints on descriptor 3
 * `create_rc=0`, or `create_rc=1` and `create_error=` the first error. In this one process:
 * under TCG a shell loop with find, mkdir and sync costs the guest a process each.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define MAX_DEPTH 8

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

struct sha256 {
    uint32_t h[8];
    uint64_t length;
    unsigned char block[64];
    size_t used;
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void compress(struct sha256 *s, const unsigned char *p)
{
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(v, s->h, sizeof(v));
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = v[7] + (ROR(v[4], 6) ^ ROR(v[4], 11) ^ ROR(v[4], 25)) + ((v[4] & v[5]) ^ (~v[4] & v[6])) + K[i] + w[i];
        uint32_t t2 = (ROR(v[0], 2) ^ ROR(v[0], 13) ^ ROR(v[0], 22)) + ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
        memmove(v + 1, v, 7 * sizeof(uint32_t));
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++)
        s->h[i] += v[i];
}

static void sha_init(struct sha256 *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof(h0));
    s->length = 0;
    s->used = 0;
}

static void sha_update(struct sha256 *s, const unsigned char *data, size_t n)
{
    s->length += n;
    while (n > 0) {
        size_t take = 64 - s->used < n ? 64 - s->used : n;
        memcpy(s->block + s->used, data, take);
        s->used += take, data += take, n -= take;
        if (s->used == 64) {
            compress(s, s->block);
            s->used = 0;
        }
    }
}

static void sha_hex(struct sha256 *s, char out[65])
{
    uint64_t bits = s->length * 8;
    unsigned char pad = 0x80, zero = 0, len[8];
    sha_update(s, &pad, 1);
    while (s->used != 56)
        sha_update(s, &zero, 1);
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha_update(s, len, 8);
    for (int i = 0; i < 8; i++)
        sprintf(out + 8 * i, "%08x", s->h[i]);
}

static int digest(const char *path, char out[65])
{
    unsigned char buf[65536];
    struct sha256 s;
    ssize_t n;
    int fd = open(path, O_RDONLY | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    sha_init(&s);
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        sha_update(&s, buf, (size_t)n);
    close(fd);
    if (n < 0)
        return -1;
    sha_hex(&s, out);
    return 0;
}

/* the most a list of names can be (the kernel's XATTR_LIST_MAX): a file of 2,000 user xattrs
 * lists about 30 KiB of names */
static char names[65536];

static int xattrs(const char *path)
{
    char value[4096];
    ssize_t len = llistxattr(path, names, sizeof(names));
    if (len < 0)
        return errno == ENOTSUP ? 0 : -1;
    for (char *name = names; name < names + len; name += strlen(name) + 1) {
        if (strncmp(name, "user.", 5) != 0)
            continue;
        ssize_t n = lgetxattr(path, name, value, sizeof(value) - 1);
        if (n < 0)
            return -1;
        value[n] = 0;
        printf("xattr %s %s %s\n", path, name, value);
    }
    return 0;
}

#define EXTENTS 32

/* one ioctl for a file of up to EXTENTS extents (a generated workload's files have a few) */
static int extents(const char *path)
{
    static union {
        struct fiemap map;
        char room[sizeof(struct fiemap) + EXTENTS * sizeof(struct fiemap_extent)];
    } buf;
    struct fiemap *m = &buf.map;
    uint64_t start = 0;
    int last = 0, fd = open(path, O_RDONLY | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    while (!last) {
        memset(m, 0, sizeof(*m));
        m->fm_start = start;
        m->fm_length = FIEMAP_MAX_OFFSET - start;
        m->fm_extent_count = EXTENTS;
        if (ioctl(fd, FS_IOC_FIEMAP, m) < 0) {
            int unsupported = errno == EOPNOTSUPP || errno == ENOTTY;
            close(fd);
            return unsupported ? 0 : -1;
        }
        last = m->fm_mapped_extents == 0;
        for (unsigned i = 0; i < m->fm_mapped_extents; i++) {
            struct fiemap_extent *e = &m->fm_extents[i];
            printf("extent %s %llu %llu %x\n", path, (unsigned long long)e->fe_logical,
                   (unsigned long long)e->fe_length, (unsigned)e->fe_flags);
            start = e->fe_logical + e->fe_length;
            last |= (e->fe_flags & FIEMAP_EXTENT_LAST) != 0;
        }
    }
    close(fd);
    return 0;
}

static int entry(const char *path, const struct stat *st)
{
    char sum[65] = "-", target[4096] = "-";
    if (S_ISREG(st->st_mode) && digest(path, sum) < 0)
        return -1;
    if (S_ISLNK(st->st_mode)) {
        ssize_t n = readlink(path, target, sizeof(target) - 1);
        if (n < 0)
            return -1;
        target[n] = 0;
    }
    printf("entry %s %x %lld %lu %lu %s %s\n", path, (unsigned)st->st_mode, (long long)st->st_size,
           (unsigned long)st->st_nlink, (unsigned long)st->st_ino, sum, target);
    if (xattrs(path) < 0)
        return -1;
    return S_ISREG(st->st_mode) ? extents(path) : 0;
}

static int walk(const char *dir, int depth)
{
    int failed = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d) {
        fprintf(stderr, "pp-tree: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    while ((e = readdir(d))) {
        char path[4096];
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (strcmp(dir, ".") == 0)
            snprintf(path, sizeof(path), "%s", e->d_name);
        else
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (lstat(path, &st) < 0 || entry(path, &st) < 0) {
            fprintf(stderr, "pp-tree: %s: %s\n", path, strerror(errno));
            failed = 1;
            continue;
        }
        if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH)
            failed |= walk(path, depth + 1);
    }
    closedir(d);
    return failed;
}

#define NEW_NAMES 256
#define MAX_NEST 64

struct made {
    char *paths[NEW_NAMES + 1];
    int count;
    char error[8192];
};

static void failed(struct made *m, const char *what, const char *path)
{
    if (!m->error[0])
        snprintf(m->error, sizeof(m->error), "pp-tree: %s %s: %s", what, path, strerror(errno));
}

/* DIR and the directories below it, in find's order (a directory, then what it holds, in
 * readdir order), entering none of another filesystem than `dev`. */
static void directories(const char *dir, dev_t dev, int nest, char **out, int *count)
{
    DIR *d;
    struct dirent *e;
    if (*count < NEW_NAMES)
        out[(*count)++] = strdup(dir);
    if (nest >= MAX_NEST || !(d = opendir(dir)))
        return;
    while ((e = readdir(d))) {
        char path[4096];
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (st.st_dev == dev)
                directories(path, dev, nest + 1, out, count);
            else if (*count < NEW_NAMES)
                out[(*count)++] = strdup(path);
        }
    }
    closedir(d);
}

static void new_file(struct made *m, const char *dir)
{
    static const char text[] = "made after recovery\n";
    char path[4096];
    snprintf(path, sizeof(path), "%s/pp-new", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
        failed(m, "can't create", path);
        return;
    }
    if (write(fd, text, sizeof(text) - 1) != (ssize_t)(sizeof(text) - 1))
        failed(m, "can't write", path);
    else
        m->paths[m->count++] = strdup(path);
    close(fd);
}

static int after(const char *root, const char *dir)
{
    static struct made m;
    char *dirs[NEW_NAMES + 1], path[4096];
    struct stat st;
    int count = 0;
    dirs[count++] = (char *)root;
    if (stat(dir, &st) == 0)
        directories(dir, st.st_dev, 0, dirs, &count);
    for (int i = 0; i < count; i++)
        new_file(&m, dirs[i]);
    snprintf(path, sizeof(path), "%s/pp-new-dir", root);
    if (mkdir(path, 0777) < 0)
        failed(&m, "can't create directory", path);
    else
        m.paths[m.count++] = strdup(path);
    for (int i = 0; i < m.count; i++) {
        int fd = open(m.paths[i], O_RDONLY | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
            failed(&m, "can't open", m.paths[i]);
        else if (fsync(fd) < 0)
            failed(&m, "can't fsync", m.paths[i]);
        if (fd >= 0)
            close(fd);
    }
    if (m.error[0])
        return dprintf(3, "create_rc=1\ncreate_error=%s\n", m.error) < 0;
    return dprintf(3, "create_rc=0\n") < 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: pp-tree (in the directory to walk) | pp-tree -C DIR --after ROOT\n");
    return 2;
}

int main(int argc, char **argv)
{
    int walked, here;
    if (argc == 1)
        return walk(".", 1);
    if (argc != 5 || strcmp(argv[1], "-C") != 0 || strcmp(argv[3], "--after") != 0)
        return usage();
    here = open(".", O_RDONLY | O_DIRECTORY);  /* DIR and ROOT may be relative to it */
    if (here < 0 || chdir(argv[2]) < 0) {
        fprintf(stderr, "pp-tree: %s: %s\n", argv[2], strerror(errno));
        walked = 1;
    } else {
        walked = walk(".", 1);
    }
    fflush(stdout);
    if (here >= 0 && fchdir(here) < 0) {
        fprintf(stderr, "pp-tree: back from %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    if (after(argv[4], argv[2])) {
        fprintf(stderr, "pp-tree: descriptor 3: %s\n", strerror(errno));
        return 1;
    }
    return walked;
}

/*
 * pp-xattr: set or remove an extended attribute, as generated workloads need (busybox and
 * xfs_io have no command for it). Symlinks are not followed.
 *
 *   pp-xattr set PATH NAME VALUE     lsetxattr(PATH, NAME, VALUE)
 *   pp-xattr remove PATH NAME        lremovexattr(PATH, NAME)
 *   pp-xattr list PATH               each user.* attribute as "NAME VALUE", one a line
 *
 * Exit status 0 if the call succeeded, 1 if it failed (the error on stderr), 2 on bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

static int list(const char *path)
{
    char names[4096], value[4096];
    ssize_t len = llistxattr(path, names, sizeof(names));
    if (len < 0)
        return -1;
    for (char *name = names; name < names + len; name += strlen(name) + 1) {
        if (strncmp(name, "user.", 5) != 0)
            continue;
        ssize_t n = lgetxattr(path, name, value, sizeof(value) - 1);
        if (n < 0)
            return -1;
        value[n] = 0;
        printf("%s %s\n", name, value);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rc;
    if (argc == 5 && strcmp(argv[1], "set") == 0)
        rc = lsetxattr(argv[2], argv[3], argv[4], strlen(argv[4]), 0);
    else if (argc == 4 && strcmp(argv[1], "remove") == 0)
        rc = lremovexattr(argv[2], argv[3]);
    else if (argc == 3 && strcmp(argv[1], "list") == 0)
        rc = list(argv[2]);
    else {
        fprintf(stderr, "usage: pp-xattr set PATH NAME VALUE | remove PATH NAME | list PATH\n");
        return 2;
    }
    if (rc < 0) {
        fprintf(stderr, "pp-xattr %s %s: %s\n", argv[1], argv[2], strerror(errno));
        return 1;
    }
    return 0;
}

/*
 * pp-xattr: set or remove an extended attribute, as generated workloads need (busybox and
 * xfs_io have no command for it). Symlinks are not followed.
 *
 *   pp-xattr set PATH NAME VALUE     lsetxattr(PATH, NAME, VALUE)
 *   pp-xattr remove PATH NAME        lremovexattr(PATH, NAME)
 *
 * Exit status 0 if the call succeeded, 1 if it failed (the error on stderr), 2 on bad usage.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

int main(int argc, char **argv)
{
    int rc;
    if (argc == 5 && strcmp(argv[1], "set") == 0)
        rc = lsetxattr(argv[2], argv[3], argv[4], strlen(argv[4]), 0);
    else if (argc == 4 && strcmp(argv[1], "remove") == 0)
        rc = lremovexattr(argv[2], argv[3]);
    else {
        fprintf(stderr, "usage: pp-xattr set PATH NAME VALUE | remove PATH NAME\n");
        return 2;
    }
    if (rc < 0) {
        fprintf(stderr, "pp-xattr %s %s: %s\n", argv[1], argv[2], strerror(errno));
        return 1;
    }
    return 0;
}
